// The options of the node that runs the server's code, written once, in package.json's `start` script
// (`npm run admin` and `npm run dev` carry the same, which test/embedded-memory.test.ts checks); what
// runs that code another way (the tests' server processes and workers, the benchmarks) reads them here.
//
// --no-wasm-dynamic-tiering --no-wasm-tier-up: the embedded PostgreSQL is a WebAssembly module, and by
// default V8 compiles the functions it runs most again with its optimising compiler, in the background,
// in the second after start. That took the process from about 250 MB to over 700 MB for a moment,
// enough to get a small machine's server killed for memory. The baseline compiler's code answers the
// embedded database's queries at 85 to 100 % of the optimised code's throughput (docs/performance.md),
// so WebAssembly stays at that tier. The server runs no other WebAssembly.
import fs from 'node:fs';

const { scripts } = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

/** The options between `node` and the program in `npm start`'s command line. */
export const SERVER_NODE_OPTIONS = scripts.start.split(/\s+/).filter((word) => word.startsWith('-'));
