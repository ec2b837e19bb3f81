/**
 * `npm run contract:changes` (part of `npm test`): fails when `openapi/*.yaml` breaks a client of
 * the contract last released (`openapi/released/`) and CHANGELOG.md does not announce it. Given
 * `--released DIR --current DIR --changelog FILE`, it checks those instead (the tests use copies).
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parseYaml } from '../src/core/contract.js';
import { breakingChanges, unannounced } from './contract-changes.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CONTRACTS = ['public-v1.yaml', 'oauth.yaml'];

const { values } = parseArgs({
  options: {
    released: { type: 'string', default: path.join(ROOT, 'openapi', 'released') },
    current: { type: 'string', default: path.join(ROOT, 'openapi') },
    changelog: { type: 'string', default: path.join(ROOT, 'CHANGELOG.md') },
  },
});

const read = (dir: string, file: string) => parseYaml(fs.readFileSync(path.join(dir, file), 'utf8'));
const changelog = fs.readFileSync(values.changelog, 'utf8');
let failed = false;
for (const file of CONTRACTS) {
  const changes = breakingChanges(read(values.released, file), read(values.current, file));
  const missing = unannounced(changes, changelog);
  console.log(
    `${file}: ${changes.length} breaking change${changes.length === 1 ? '' : 's'} since the last release, ` +
      `${missing.size} subject${missing.size === 1 ? '' : 's'} not announced`,
  );
  for (const [subject, descriptions] of missing) {
    failed = true;
    console.error(`  \`${subject}\` breaks clients of the released contract:`);
    for (const description of descriptions.slice(0, 5)) console.error(`    - ${description}`);
    if (descriptions.length > 5) console.error(`    - and ${descriptions.length - 5} more`);
  }
}
if (failed) {
  console.error(
    '\nAnnounce each subject above in CHANGELOG.md, under "## Unreleased" → "### Breaking changes", ' +
      'as a bullet naming it in backticks (e.g. - `GET /public/v1/posts`: …), or make the change additive.',
  );
  process.exit(1);
}
