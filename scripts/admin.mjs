import { runBuilt } from './run-built.mjs';

await runBuilt('admin.mjs');
