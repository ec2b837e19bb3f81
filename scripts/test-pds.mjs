// The reference Bluesky PDS of the tests (@atproto/dev-env in test/pds, which the project's own `npm install`
// never installs): installs it when it is missing, its lockfile changed, or it was installed on another
// platform, and does nothing otherwise. `npm test`, .ci/run and the tests' global setup run it;
// `node scripts/test-pds.mjs` runs it by hand (`--force` installs again). Plain JavaScript: it runs before
// anything is compiled.
//
// Its one native module, better-sqlite3, is taken at 13.x (test/pds/package.json's `overrides`), whose
// package carries Node-API binaries for every platform: nothing is compiled and nothing is downloaded from
// outside the npm registry, so every install script stays off. (The 12.x that @atproto/pds asks for is
// built on node::ObjectWrap, whose destructor aborts Node 24 when a statement is collected by a garbage
// collection outside JavaScript: the test process died with SIGABRT at random.) A Node-API binary loads in
// every Node of the project's range, so one install serves the Node 24 pass and the Node 22 pass.
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
export const TEST_PDS_DIR = path.join(root, 'test', 'pds');
const stampFile = path.join(TEST_PDS_DIR, 'node_modules', '.installed-for');
const logFile = path.join(root, '.cache', 'test-pds-install.log');

/** What an install is for: its package.json and lockfile, and the platform its binaries were chosen for. */
function wantedStamp() {
  const hash = crypto.createHash('sha256');
  for (const file of ['package.json', 'package-lock.json']) hash.update(fs.readFileSync(path.join(TEST_PDS_DIR, file)));
  return `${hash.digest('hex')} ${process.platform}-${process.arch}`;
}

/** Why the install cannot be used as it is; undefined when it can. */
export function testPdsStaleReason() {
  if (!fs.existsSync(stampFile)) return 'it is not installed';
  const [lock, platform] = fs.readFileSync(stampFile, 'utf8').trim().split(' ');
  const [wantedLock, wantedPlatform] = wantedStamp().split(' ');
  if (lock !== wantedLock) return 'test/pds/package.json or its lockfile changed';
  if (platform !== wantedPlatform) return `it was installed for ${platform}, and this machine is ${wantedPlatform}`;
  return undefined;
}

function fail(message) {
  console.error(message);
  process.exit(1);
}

/** Installs test/pds; exits the process when that fails, saying why. */
export function installTestPds() {
  const started = performance.now();
  // npm and the module's check run on the Node running the tests.
  const env = { ...process.env, PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}` };
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  fs.writeFileSync(logFile, '');
  console.error(`Installing the test PDS (test/pds); the log is in ${path.relative(root, logFile)}…`);
  fs.rmSync(stampFile, { force: true });
  const log = fs.openSync(logFile, 'a');
  const { status } = spawnSync(
    'npm',
    ['ci', '--ignore-scripts', '--loglevel=warn', '--prefix', TEST_PDS_DIR, '--no-audit', '--no-fund'],
    { cwd: TEST_PDS_DIR, env, stdio: ['ignore', log, log] },
  );
  fs.closeSync(log);
  if (status !== 0) {
    const tail = fs.readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-30).join('\n');
    fail(`${tail}\n\nThe install of the test PDS failed at \`npm ci\` (above, the end of its log).`);
  }
  const check = spawnSync(
    process.execPath,
    ['-e', "new (require('better-sqlite3'))(':memory:').prepare('select 1').get()"],
    { cwd: TEST_PDS_DIR, encoding: 'utf8' },
  );
  if (check.status !== 0) fail(`${check.stderr}\nThe test PDS's better-sqlite3 does not load on this machine.`);
  fs.writeFileSync(stampFile, `${wantedStamp()}\n`);
  console.error(`The test PDS is installed (${Math.round((performance.now() - started) / 1000)} s).`);
}

/** Installs test/pds when the running Node cannot use it as it is. */
export function ensureTestPds() {
  const reason = testPdsStaleReason();
  if (reason === undefined) return;
  console.error(`The test PDS must be installed: ${reason}.`);
  installTestPds();
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--force')) installTestPds();
  else ensureTestPds();
}
