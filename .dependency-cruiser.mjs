// The import rules of src/, checked by `npm test` (scripts/test.sh runs depcruise with this file). The layers
// are those of docs/development.md (Architecture): each may import the layers below it, never one above, and no
// folder may import another that imports it back.

const CORE = '^src/core/';
const INFRASTRUCTURE = '^src/(db|crypto|net|jobs)/';
const FRAMEWORK = '^src/(http|pages)/';
const FEATURES =
  '^src/(accounts|channels|media|providers|posts|publisher|webhooks|oauth|mcp|mail|lifecycle|audit|recurring)/';
const PEOPLE = '^src/web/';
const COMPOSITION = '^src/[^/]+\\.ts$';
const ENTRY = '^src/(main\\.ts|cli/)';
const SDK = '^src/sdk/';

export default {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'Modules that import each other, directly or through others.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-circular-folders',
      comment: 'Folders that import each other, directly or through others: neither can be read or changed alone.',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'core-imports-nothing',
      comment:
        'src/core is the bottom: configuration, errors, ids, logging, the contract. It imports no other folder of src.',
      severity: 'error',
      from: { path: CORE },
      to: { path: '^src/', pathNot: CORE },
    },
    {
      name: 'infrastructure-only-on-core',
      comment: 'db, crypto, net and jobs import src/core and each other only.',
      severity: 'error',
      // src/db/schema.ts assembles the Database type from the tables each feature declares (types only).
      from: { path: INFRASTRUCTURE },
      to: { path: '^src/', pathNot: `${CORE}|${INFRASTRUCTURE}|^src/[a-z-]+/tables\\.ts$` },
    },
    {
      name: 'framework-below-features',
      comment: 'http and pages are framework code: they import no feature, page or composition.',
      severity: 'error',
      from: { path: FRAMEWORK },
      to: { path: `${FEATURES}|${PEOPLE}|${COMPOSITION}|${ENTRY}|${SDK}` },
    },
    {
      name: 'features-below-pages-and-composition',
      comment:
        'Features import the layers below them and each other (without cycles), ' +
        'never the web pages or the composition.',
      severity: 'error',
      from: { path: FEATURES },
      to: { path: `${PEOPLE}|${COMPOSITION}|${ENTRY}|${SDK}` },
    },
    {
      name: 'web-below-composition',
      comment: "The people's pages are composed by src/app.ts; they import nothing of the composition.",
      severity: 'error',
      from: { path: PEOPLE },
      to: { path: `${COMPOSITION}|${ENTRY}|${SDK}` },
    },
    {
      name: 'nothing-imports-entry-points',
      comment: 'src/main.ts and the admin CLI are where the program starts; nothing imports them.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: ENTRY },
    },
    {
      name: 'sdk-is-its-own-package',
      comment:
        '@service/sdk is published alone: it imports nothing of src but the generated contract, ' +
        'and src does not import it.',
      severity: 'error',
      from: { path: SDK },
      to: { path: '^src/', pathNot: SDK },
    },
    {
      name: 'server-does-not-import-sdk',
      severity: 'error',
      from: { path: '^src/', pathNot: SDK },
      to: { path: SDK },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/sdk/(dist|build)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs'] },
  },
};
