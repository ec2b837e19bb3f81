/** test/pds, where the tests' reference Bluesky PDS (@atproto/dev-env) is installed. */
export const TEST_PDS_DIR: string;
/** Why the install cannot be used by the running Node as it is; undefined when it can. */
export function testPdsStaleReason(): string | undefined;
/** Installs test/pds for the running Node; exits the process when that fails, saying why. */
export function installTestPds(): void;
/** Installs test/pds when the running Node cannot use it as it is. */
export function ensureTestPds(): void;
