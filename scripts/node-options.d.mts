/** The options between `node` and the program in `npm start`'s command line (package.json's `start` script). */
export const SERVER_NODE_OPTIONS: readonly string[];
