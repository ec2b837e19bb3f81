import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

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

export interface ChromiumProfile {
  context: BrowserContext;
  close(): Promise<void>;
}

/**
 * One browser user: Chromium started on a fresh, empty --user-data-dir of its own (removed on close),
 * so no cookie, cache or setting carries over between users or runs; `args` are added to its
 * command line.
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
  return {
    context,
    close: async () => {
      await context.close();
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}
