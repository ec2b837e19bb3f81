/** Rebuilds the parts of the build older than one of their sources; exits the process when a build fails. */
export function buildIfStale(): void;
