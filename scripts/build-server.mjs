// Bundles the server and the admin CLI into dist/server with esbuild: what `npm start` and
// `npm run admin` run with plain node. One bundle loads in about a third of the time Node needs to
// load the same code as hundreds of separate modules, which is most of what a start costs besides
// opening the database. Types are checked by `npm run typecheck`, not here.
import fs from 'node:fs';
import { build } from 'esbuild';

const outdir = 'dist/server';
fs.rmSync(outdir, { recursive: true, force: true });
await build({
  entryPoints: { main: 'src/main.ts', admin: 'src/cli/admin.ts', 'embedded-template': 'src/cli/embedded-template.ts' },
  outdir,
  outExtension: { '.js': '.mjs' },
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22.12',
  sourcemap: true,
  logLevel: 'warning',
  external: [
    // Load their WebAssembly and data files from beside their own modules.
    '@electric-sql/pglite',
    // Loaded only when used: S3 storage, the contract validators (on the first API request).
    '@aws-sdk/*',
    'express-openapi-validator',
    // OpenTelemetry's SDK, loaded only with tracing on. Its API is in the bundle (pg-boss imports it too);
    // the SDK's own copy meets it through the API's globals (src/core/tracing.ts).
    '@opentelemetry/sdk-*',
    '@opentelemetry/exporter-*',
    // An optional native driver that pg requires only when asked to.
    'pg-native',
  ],
  // twitter-text requires `punycode`, which names Node's own module, deprecated (a warning at every
  // start); its package, which it depends on, is bundled instead.
  alias: { punycode: 'punycode/' },
  // The CommonJS dependencies inside the bundle require Node's own modules.
  banner: {
    js:
      "import { createRequire as __createRequire } from 'node:module'; " +
      'const require = __createRequire(import.meta.url);',
  },
});
fs.writeFileSync(`${outdir}/.built-at`, `${new Date().toISOString()}\n`);
