import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/**
 * Runs axe-core (WCAG 2.0–2.2 A and AA rules, and its best practices) in the page and answers the
 * violations that are serious or critical. It is evaluated through the browser's debugging protocol,
 * which the pages' content security policy does not govern, so the pages keep their strict policy.
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(axeSource);
  // Compiled without DOM types: the function runs in the page, where `axe` is the library just loaded.
  const violations = await page.evaluate<
    AxeViolation[]
  >(`axe.run(document, { resultTypes: ['violations'] }).then((result) =>
    result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')) })))`);
  return violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical');
}
