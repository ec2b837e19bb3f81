import type { EnvReader } from './env-reader.js';

/** The sandbox network: where the sandbox adapter reaches it, and how long it takes to answer. */
export interface SandboxConfig {
  networkUrl: string;
  latencyMs: number;
  /** The limits the sandbox declares to the publisher, as a real network's adapter does. */
  limits: { concurrencyPerChannel: number; startsPerMinutePerChannel?: number };
}

/** The sandbox is a page of this server unless SANDBOX_NETWORK_URL says otherwise. */
export function readSandbox(read: EnvReader, publicUrl: string): SandboxConfig {
  return {
    networkUrl: read.origin('SANDBOX_NETWORK_URL', publicUrl),
    latencyMs: read.integer('SANDBOX_LATENCY_MS', 0, 0, 600_000),
    limits: {
      concurrencyPerChannel: read.integer('SANDBOX_CONCURRENCY_PER_CHANNEL', 20, 1, 1000),
      ...(read.text('SANDBOX_STARTS_PER_MINUTE')
        ? { startsPerMinutePerChannel: read.integer('SANDBOX_STARTS_PER_MINUTE', 0, 1, 10_000) }
        : {}),
    },
  };
}
