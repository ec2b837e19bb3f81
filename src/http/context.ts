import type { Clock } from '../core/clock.js';
import type { Config } from '../core/config.js';
import type { Logger } from '../core/logger.js';
import type { Metrics } from '../core/metrics.js';
import type { Keyring } from '../crypto/keyring.js';
import type { Db } from '../db/database.js';
import type { InstanceSecrets } from '../db/instance-secrets.js';
import type { OutboundClient } from '../net/outbound-client.js';
import type { CursorCodec } from './cursors.js';

/**
 * What every feature is built from. Features that need more (media storage, the providers' adapters)
 * declare it in a context of their own that extends this one; `src/compose.ts` builds one object that
 * is all of them.
 */
export interface AppContext {
  config: Config;
  db: Db;
  logger: Logger;
  /** The current time; every rule that depends on time reads it here. */
  clock: Clock;
  /** Outbound HTTP to URLs that callers give (media downloads, app pictures). */
  outbound: OutboundClient;
  /** Signs and reads the `nextCursor` of every paginated list. */
  cursors: CursorCodec;
  /** Encrypts and decrypts what is stored encrypted at rest (a connected account's tokens). */
  keyring: Keyring;
  /** The installation's own keys, stored encrypted. */
  secrets: InstanceSecrets;
  /** The service's Prometheus series (served at `/metrics` when the configuration says so). */
  metrics: Metrics;
}
