import { runBuilt } from './run-built.mjs';

await runBuilt('main.mjs');
