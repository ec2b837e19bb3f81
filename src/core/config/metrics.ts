import type { EnvReader } from './env-reader.js';

/** Prometheus metrics at `/metrics`: off unless a port or a token says where and to whom. */
export interface MetricsConfig {
  /** A listener of its own serving `/metrics` only, on the server's host (METRICS_PORT). */
  port: number | undefined;
  /** `/metrics` on the main port, to requests with `Authorization: Bearer <token>` (METRICS_TOKEN). */
  token: string | undefined;
}

export function readMetrics(read: EnvReader): MetricsConfig {
  const token = read.text('METRICS_TOKEN')?.trim() || undefined;
  if (token !== undefined && token.length < 16) read.problem('METRICS_TOKEN must be at least 16 characters');
  return {
    port: read.text('METRICS_PORT') ? read.integer('METRICS_PORT', 0, 1, 65_535) : undefined,
    token,
  };
}
