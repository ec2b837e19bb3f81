import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from './support/processes.js';
import { scaled } from './support/timeouts.js';

const run = promisify(execFile);
const DEPCRUISE = path.join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruiser.mjs');
const made: string[] = [];
afterAll(() => made.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

/** Runs the project's import rules (as `npm test` does) on a tree of files given by path and content. */
async function check(files: Record<string, string>): Promise<{ passed: boolean; output: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'structure-'));
  made.push(dir);
  fs.copyFileSync(path.join(ROOT, '.dependency-cruiser.mjs'), path.join(dir, '.dependency-cruiser.mjs'));
  fs.writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true },
      include: ['src'],
    }),
  );
  for (const [file, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), content);
  }
  try {
    const { stdout } = await run(
      process.execPath,
      [DEPCRUISE, 'src', '--config', '.dependency-cruiser.mjs', '--output-type', 'err'],
      { cwd: dir },
    );
    return { passed: true, output: stdout };
  } catch (error) {
    return { passed: false, output: (error as { stdout: string }).stdout };
  }
}

describe('the import rules of src/ (.dependency-cruiser.mjs, run by npm test)', () => {
  it(
    'pass imports that run downhill',
    async () => {
      const result = await check({
        'src/core/errors.ts': 'export const a = 1;\n',
        'src/http/router.ts': "import { a } from '../core/errors.js';\nexport const b = a;\n",
        'src/posts/routes.ts': "import { b } from '../http/router.js';\nexport const c = b;\n",
        'src/app.ts': "import { c } from './posts/routes.js';\nexport const d = c;\n",
      });
      expect(result.output).toContain('no dependency violations');
      expect(result.passed).toBe(true);
    },
    scaled(60_000),
  );

  it('place every folder of src/ in a layer, so that a rule checks its imports', async () => {
    const config = (await import(path.join(ROOT, '.dependency-cruiser.mjs'))) as {
      default: { forbidden: { from: { path?: string }; to: { path?: string } }[] };
    };
    // `^src/` alone is the rules that hold for every folder (cycles), not a layer.
    const layers = config.default.forbidden
      .flatMap((rule) => [rule.from.path, rule.to.path])
      .filter((layer): layer is string => layer !== undefined && layer !== '^src/')
      .map((layer) => new RegExp(layer));
    const folders = fs
      .readdirSync(path.join(ROOT, 'src'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => `src/${entry.name}/`);
    for (const folder of folders)
      expect(
        layers.some((layer) => layer.test(`${folder}module.ts`)),
        folder,
      ).toBe(true);
  });

  it(
    'fail on a folder that imports a higher layer, and on folders that import each other',
    async () => {
      const result = await check({
        'src/core/errors.ts': "import { b } from '../http/router.js';\nexport const a = b;\n",
        'src/http/router.ts': "import { c } from '../posts/routes.js';\nexport const b = c;\n",
        'src/posts/routes.ts': 'export const c = 1;\n',
        'src/media/one.ts': "import { y } from '../channels/two.js';\nexport const x = y;\n",
        'src/channels/two.ts': "import { z } from '../media/three.js';\nexport const y = z;\n",
        'src/media/three.ts': 'export const z = 1;\n',
      });
      expect(result.passed).toBe(false);
      for (const rule of ['core-imports-nothing', 'framework-below-features', 'no-circular-folders'])
        expect(result.output).toContain(rule);
      // media/one → channels/two → media/three: no module cycle, but the folders import each other.
      expect(result.output).toMatch(/no-circular-folders: src\/(media|channels)/);
    },
    scaled(60_000),
  );
});

describe('the lists of test files that run on fewer passes', () => {
  const listed = (file: string) =>
    fs
      .readFileSync(path.join(ROOT, 'test', file), 'utf8')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'));

  it.each([
    ['node-22-suite.txt', 10],
    ['one-database.txt', 10],
    ['embedded-only.txt', 1],
  ])('test/%s names test files that exist, so that a renamed file cannot drop out of it unnoticed', (file, least) => {
    const files = listed(file);
    expect(files.length).toBeGreaterThan(least);
    expect(files.filter((name) => !fs.existsSync(path.join(ROOT, name)))).toEqual([]);
  });

  it('keeps every file that opens a database of the service on both databases, unless the edge is its subject', () => {
    // The pages in a browser, the reference's samples, and the contract's edge under generated requests.
    const edgeSubject = ['test/code-samples.test.ts', 'test/api-robustness.test.ts', 'test/contract-fuzz.test.ts'];
    const opensDatabase = listed('one-database.txt').filter(
      (file) =>
        !file.startsWith('test/browser-') &&
        !edgeSubject.includes(file) &&
        /from '[./]+(support\/(server|database|publishing-rig)|src\/db\/[\w-]+)\.js'/.test(
          fs.readFileSync(path.join(ROOT, file), 'utf8'),
        ),
    );
    expect(opensDatabase).toEqual([]);
  });

  it('runs the files about the embedded database on it alone, and no file on neither database', () => {
    const embedded = listed('embedded-only.txt');
    expect(embedded.filter((file) => !/embedded|backup/.test(file))).toEqual([]);
    expect(embedded.filter((file) => listed('one-database.txt').includes(file))).toEqual([]);
  });

  it('keeps the files that start the reference Bluesky PDS out of the Node 22 pass, which does not build it', () => {
    // Its better-sqlite3 is built for the Node of `npm test`; .ci/run's pass on Node 22 skips its install.
    const startsPds = listed('node-22-suite.txt').filter((file) =>
      /from '[./]+support\/pds\.js'/.test(fs.readFileSync(path.join(ROOT, file), 'utf8')),
    );
    expect(startsPds).toEqual([]);
  });
});
