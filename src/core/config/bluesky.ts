import type { EnvReader } from './env-reader.js';

/**
 * Bluesky: nothing to register. A user signs in with their handle and an app password they made for
 * this service; where no server is named, the handle is resolved to its DID (at the entryway) and the
 * DID to its PDS (at the PLC directory, or the `did:web` document).
 */
export interface BlueskyConfig {
  /** Where a handle is resolved (`com.atproto.identity.resolveHandle`), and accounts named by e-mail sign in. */
  entrywayUrl: string;
  /** Where a `did:plc` DID's document is read (`GET {plcUrl}/{did}`). */
  plcUrl: string;
}

/** Bluesky channels, unless BLUESKY_ENABLED is false. */
export function readBluesky(read: EnvReader): BlueskyConfig | undefined {
  const enabled = read.boolean('BLUESKY_ENABLED', true);
  const entrywayUrl = read.origin('BLUESKY_ENTRYWAY_URL', 'https://bsky.social');
  const plcUrl = read.origin('BLUESKY_PLC_URL', 'https://plc.directory');
  return enabled ? { entrywayUrl, plcUrl } : undefined;
}
