import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { describe } from 'vitest';
import { ROOT } from './processes.js';
import { TIMEOUTS } from './timeouts.js';

/** Debian's Chromium (`apt-get install chromium`); no package downloads a browser of its own. */
export const CHROMIUM_PATH = '/usr/bin/chromium';

export const chromiumInstalled = fs.existsSync(CHROMIUM_PATH);

/**
 * Browser tests run whenever Chromium is installed. Without it they are skipped, loudly, on a
 * developer's machine; in CI (CI=true) they run and fail, so a missing browser cannot pass unnoticed.
 */
export const skipBrowserTests = !chromiumInstalled && process.env.CI !== 'true';

if (skipBrowserTests) {
  console.warn(
    `\n  Browser tests SKIPPED: no Chromium at ${CHROMIUM_PATH}. Install it with \`apt-get install chromium\` to run them.\n`,
  );
}

/** A describe block of browser tests: skipped as `skipBrowserTests` says, each test given TIMEOUTS.browserTest. */
export function describeInChromium(name: string, tests: () => void): void {
  describe.skipIf(skipBrowserTests)(name, { timeout: TIMEOUTS.browserTest }, tests);
}

export interface ChromiumProfile {
  context: BrowserContext;
  /** What the scripts of its pages threw and did not catch. */
  pageErrors: Error[];
  close(): Promise<void>;
}

/**
 * One browser user: Chromium started on a fresh, empty --user-data-dir of its own (removed on close),
 * so no cookie, cache or setting carries over between users or runs; `args` are added to its
 * command line. Every wait of Playwright's (an element to act on, a navigation) lasts up to
 * TIMEOUTS.browser.
 */
export async function launchChromium(options: { args?: string[] } = {}): Promise<ChromiumProfile> {
  if (!chromiumInstalled)
    throw new Error(`Chromium is required for the browser tests and was not found at ${CHROMIUM_PATH}.`);
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'post-scheduler-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      ...(options.args ?? []),
    ],
  });
  context.setDefaultTimeout(TIMEOUTS.browser);
  context.setDefaultNavigationTimeout(TIMEOUTS.browser);
  const pageErrors: Error[] = [];
  context.on('weberror', (webError) => pageErrors.push(webError.error()));
  return {
    context,
    pageErrors,
    close: async () => {
      await context.close();
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

export interface BrowserWithPage extends ChromiumProfile {
  page: Page;
  /** Closes the browser; fails when a script of one of its pages threw. */
  close(): Promise<void>;
}

/**
 * The browser of the tests that follow one user (`launchChromium`), with a page open. Closing it
 * fails when a script of a page threw, so a broken page script fails the test file.
 */
export async function openBrowser(options: { args?: string[] } = {}): Promise<BrowserWithPage> {
  const profile = await launchChromium(options);
  const page = await profile.context.newPage();
  return {
    ...profile,
    page,
    close: async () => {
      await profile.close();
      if (profile.pageErrors.length > 0)
        throw new Error(`a page's script threw:\n${profile.pageErrors.map((error) => error.stack).join('\n')}`);
    },
  };
}

/**
 * For expect.poll on what a page shows after a click or a navigation: the browser's wait, instead of
 * expect.poll's default second.
 */
export const PAGE_WAIT = { timeout: TIMEOUTS.browser, interval: 100 } as const;

/** The path of the page's address. */
export const pathOf = (page: Page): string => new URL(page.url()).pathname;

/** Waits until the page is at `pathname`, loaded with its scripts. */
export async function untilAt(page: Page, pathname: string): Promise<void> {
  await page.waitForURL((url) => url.pathname === pathname);
}

/** The password every user signed up by `signUp` has. */
export const NEW_USER_PASSWORD = 'a long and good password';

/**
 * Fills in the sign-up form the page shows and sends it; resolves once the browser has left the
 * sign-up page (for the calendar, or where the link it came from leads) and loaded the next one.
 */
export async function signUp(page: Page, user: { name: string; email: string; organization: string }): Promise<void> {
  await page.getByLabel('Your name').fill(user.name);
  await page.getByLabel('Email').fill(user.email);
  await page.getByLabel('Password').fill(NEW_USER_PASSWORD);
  await page.getByLabel('Organization name').fill(user.organization);
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.waitForURL((url) => url.pathname !== '/signup');
}

/** Where a test leaves a file for people to look at after the run (a screenshot): `test-artifacts/<name>`. */
export function artifactPath(name: string): string {
  const directory = path.join(ROOT, 'test-artifacts');
  fs.mkdirSync(directory, { recursive: true });
  return path.join(directory, name);
}

/**
 * How wide the page is at the viewport's width, and what sticks out past its right edge (tag, class,
 * width), so that a page that scrolls sideways on a phone says why.
 */
export async function pageWidth(page: Page): Promise<{ scrollWidth: number; wider: string[] }> {
  // Compiled without DOM types: the function runs in the page.
  return page.evaluate(`(() => {
    const limit = document.documentElement.clientWidth;
    const wider = [...document.body.querySelectorAll('*')]
      .filter((element) => element.getBoundingClientRect().right > limit + 0.5)
      .slice(0, 8)
      .map((element) => element.tagName.toLowerCase() + (element.className ? '.' + String(element.className).replace(/ /g, '.') : '') + ' ' + Math.round(element.getBoundingClientRect().width));
    return { scrollWidth: document.documentElement.scrollWidth, wider };
  })()`);
}
