// The reference Bluesky PDS of the tests (@atproto/dev-env in test/pds, which the project's own `npm install`
// never installs): installs it when it is missing, its lockfile changed, or the Node running the tests has
// another ABI than the one it was built for, and does nothing otherwise. `npm test`, .ci/run and the tests'
// global setup run it; `node scripts/test-pds.mjs` runs it by hand (`--force` installs again). Plain
// JavaScript: it runs before anything is compiled.
//
// Its one native module, better-sqlite3, is compiled here for the running Node, from the Node headers on this
// machine: npm brings no prebuilt binary, and node-gyp and prebuild-install would download headers or a
// binary from outside the npm registry (nodejs.org, GitHub), which the project does not allow. So the
// packages are installed with every install script off, and then better-sqlite3's alone runs, told to build
// from source with those headers; test/pds/package.json's allowScripts records the same review for npm's own
// policy.
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
export const TEST_PDS_DIR = path.join(root, 'test', 'pds');
const stampFile = path.join(TEST_PDS_DIR, 'node_modules', '.installed-for');
const logFile = path.join(root, '.cache', 'test-pds-install.log');

/**
 * What an install is for: its package.json and lockfile, and the Node ABI, platform and architecture
 * better-sqlite3's binary was built for (a new Node of the same ABI loads it; another ABI needs a new build).
 */
function wantedStamp() {
  const hash = crypto.createHash('sha256');
  for (const file of ['package.json', 'package-lock.json']) hash.update(fs.readFileSync(path.join(TEST_PDS_DIR, file)));
  return `${hash.digest('hex')} node-abi-${process.versions.modules} ${process.platform}-${process.arch}`;
}

/** Why the install cannot be used by the running Node as it is; undefined when it can. */
export function testPdsStaleReason() {
  if (!fs.existsSync(stampFile)) return 'it is not installed';
  const [lock, abi, platform] = fs.readFileSync(stampFile, 'utf8').trim().split(' ');
  const [wantedLock, wantedAbi, wantedPlatform] = wantedStamp().split(' ');
  if (lock !== wantedLock) return 'test/pds/package.json or its lockfile changed';
  if (abi !== wantedAbi || platform !== wantedPlatform)
    return `it was built for ${abi} ${platform}, and Node ${process.version} is ${wantedAbi} ${wantedPlatform}`;
  return undefined;
}

/** Whether `dir` holds the headers of the running Node (include/node, of the same version). */
function hasHeaders(dir) {
  const file = path.join(dir, 'include', 'node', 'node_version.h');
  if (!fs.existsSync(file)) return false;
  const header = fs.readFileSync(file, 'utf8');
  const part = (name) => new RegExp(`#define NODE_${name}_VERSION (\\d+)`).exec(header)?.[1];
  return `v${part('MAJOR')}.${part('MINOR')}.${part('PATCH')}` === process.version;
}

/**
 * The headers of the running Node, for node-gyp (its `nodedir`): those of its own distribution (bin/node
 * next to include/node: nvm's, the official archives, .ci/run's Node 22), else those of the official
 * binary package the `node` package installed (a later `npm install <package>` prunes it, as npm did not
 * record it, leaving bin/node), else the same package fetched from the npm registry into .cache.
 */
function nodeHeaders(env) {
  const binary = `node-${process.platform}-${process.arch}`;
  const fetched = path.join(root, '.cache', `node-${process.versions.node}`);
  const candidates = [
    path.resolve(process.execPath, '..', '..'),
    path.join(root, 'node_modules', 'node', 'node_modules', binary),
    path.join(fetched, 'node_modules', binary),
  ];
  const found = candidates.find(hasHeaders);
  if (found) return found;
  console.error(`Fetching the headers of Node ${process.version} (${binary}) from the npm registry into .cache…`);
  spawnSync(
    'npm',
    [
      'install',
      '--prefix',
      fetched,
      '--no-save',
      '--no-package-lock',
      '--no-audit',
      '--no-fund',
      `${binary}@${process.versions.node}`,
    ],
    { env, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  return hasHeaders(candidates[2]) ? candidates[2] : undefined;
}

/** The programs node-gyp compiles with that are not on this machine. */
function missingCompilers() {
  const present = (program) => spawnSync(program, ['--version'], { stdio: 'ignore' }).status === 0;
  return ['make', 'g++', 'python3'].filter((program) => !present(program));
}

function fail(message) {
  console.error(message);
  process.exit(1);
}

/** Installs test/pds for the running Node; exits the process when that fails, saying why. */
export function installTestPds() {
  const missing = missingCompilers();
  if (missing.length > 0)
    fail(
      `The test PDS compiles better-sqlite3, which needs ${missing.join(', ')}: on Debian, ` +
        'apt-get install build-essential python3.',
    );
  const started = performance.now();
  const env = {
    ...process.env,
    // npm, node-gyp and the compiled module's check all run on the Node running the tests.
    PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`,
  };
  const headers = nodeHeaders(env);
  if (!headers)
    fail(`The test PDS needs the headers of Node ${process.version} to build better-sqlite3, and found none.`);
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  fs.writeFileSync(logFile, '');
  console.error(
    `Installing the test PDS (test/pds) for Node ${process.version}; the log is in ${path.relative(root, logFile)}…`,
  );
  const npm = (args, extraEnv = {}) => {
    const log = fs.openSync(logFile, 'a');
    const { status } = spawnSync('npm', [...args, '--prefix', TEST_PDS_DIR, '--no-audit', '--no-fund'], {
      cwd: TEST_PDS_DIR,
      env: { ...env, ...extraEnv },
      stdio: ['ignore', log, log],
    });
    fs.closeSync(log);
    if (status !== 0) {
      const tail = fs.readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-30).join('\n');
      fail(`${tail}\n\nThe install of the test PDS failed at \`npm ${args.join(' ')}\` (above, the end of its log).`);
    }
  };
  fs.rmSync(stampFile, { force: true });
  npm(['ci', '--ignore-scripts', '--loglevel=warn']);
  // prebuild-install, better-sqlite3's first step, would fetch a binary from GitHub: build-from-source,
  // naming the package, makes it give way to node-gyp at once.
  npm(['rebuild', 'better-sqlite3', '--foreground-scripts', '--loglevel=info'], {
    npm_config_build_from_source: 'better-sqlite3',
    npm_config_nodedir: headers,
  });
  const check = spawnSync(
    process.execPath,
    ['-e', "new (require('better-sqlite3'))(':memory:').prepare('select 1').get()"],
    { cwd: TEST_PDS_DIR, encoding: 'utf8' },
  );
  if (check.status !== 0) fail(`${check.stderr}\nThe test PDS's better-sqlite3 was built but does not load.`);
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
