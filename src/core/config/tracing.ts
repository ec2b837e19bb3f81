import type { EnvReader } from './env-reader.js';

/** The samplers of the OpenTelemetry specification that need nothing but a ratio. */
export const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;
export type SamplerName = (typeof SAMPLERS)[number];

export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;

/**
 * OpenTelemetry traces sent to an OTLP/HTTP receiver (a collector, or a tracing backend that takes
 * OTLP), read from the specification's own variables. Off unless an OTLP endpoint is named or
 * OTEL_TRACES_EXPORTER=otlp asks for the standard local one; OTEL_SDK_DISABLED=true or
 * OTEL_TRACES_EXPORTER=none turn it off whatever else is set.
 */
export interface TracingConfig {
  /** Where spans are POSTed: the traces endpoint itself, `/v1/traces` included. */
  endpoint: string;
  protocol: (typeof OTLP_PROTOCOLS)[number];
  /** Sent with every export (a collector's API key): never logged. */
  headers: Record<string, string>;
  /** Longest an export may take. */
  timeoutMs: number;
  compression: 'gzip' | 'none';
  /** `service.name` and the other attributes of the resource every span belongs to. */
  resource: Record<string, string>;
  sampler: SamplerName;
  /** The share of traces kept by the ratio samplers, 0 to 1. */
  samplerRatio: number;
  /** How long finished spans wait to be sent together. */
  scheduleDelayMs: number;
  /** Finished spans waiting to be sent beyond this many are dropped (the receiver is slow or away). */
  maxQueueSize: number;
}

// The specification's defaults (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/).
const DEFAULT_ENDPOINT = 'http://localhost:4318';
const TRACES_PATH = 'v1/traces';
const DEFAULT_SERVICE_NAME = 'post-scheduler';

export function readTracing(read: EnvReader): TracingConfig | undefined {
  const disabled = read.boolean('OTEL_SDK_DISABLED', false);
  const exporters = read.list('OTEL_TRACES_EXPORTER');
  const unsupported = exporters.filter((name) => name !== 'otlp' && name !== 'none');
  if (unsupported.length > 0) read.problem(`OTEL_TRACES_EXPORTER must be otlp or none, got "${unsupported.join(',')}"`);
  const endpoint = readEndpoint(read, exporters.includes('otlp'));
  if (disabled || exporters.includes('none') || endpoint === undefined) return undefined;
  const ratio = readRatio(read);
  return {
    endpoint,
    protocol: readProtocol(read),
    headers: {
      ...readPairs(read, 'OTEL_EXPORTER_OTLP_HEADERS', 'a header'),
      ...readPairs(read, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS', 'a header'),
    },
    timeoutMs: read.integer(
      read.text('OTEL_EXPORTER_OTLP_TRACES_TIMEOUT')
        ? 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT'
        : 'OTEL_EXPORTER_OTLP_TIMEOUT',
      10_000,
      1,
      600_000,
    ),
    compression: read.oneOf(
      read.text('OTEL_EXPORTER_OTLP_TRACES_COMPRESSION')
        ? 'OTEL_EXPORTER_OTLP_TRACES_COMPRESSION'
        : 'OTEL_EXPORTER_OTLP_COMPRESSION',
      ['gzip', 'none'],
      'none',
    ),
    resource: readResource(read),
    sampler: read.oneOf('OTEL_TRACES_SAMPLER', SAMPLERS, 'parentbased_always_on'),
    samplerRatio: ratio,
    scheduleDelayMs: read.integer('OTEL_BSP_SCHEDULE_DELAY', 5000, 0, 3_600_000),
    maxQueueSize: read.integer('OTEL_BSP_MAX_QUEUE_SIZE', 2048, 1, 1_000_000),
  };
}

/**
 * The traces endpoint: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, or OTEL_EXPORTER_OTLP_ENDPOINT
 * with `v1/traces` appended, as the specification has it; the standard local receiver when only the
 * exporter was asked for; `undefined` (tracing off) when neither.
 */
function readEndpoint(read: EnvReader, asked: boolean): string | undefined {
  const traces = read.text('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  if (traces !== undefined) return httpUrl(read, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', traces);
  const base = read.text('OTEL_EXPORTER_OTLP_ENDPOINT') ?? (asked ? DEFAULT_ENDPOINT : undefined);
  if (base === undefined) return undefined;
  const checked = httpUrl(read, 'OTEL_EXPORTER_OTLP_ENDPOINT', base);
  return `${checked.endsWith('/') ? checked : `${checked}/`}${TRACES_PATH}`;
}

function httpUrl(read: EnvReader, name: string, value: string): string {
  try {
    const url = new URL(value);
    if (url.protocol === 'http:' || url.protocol === 'https:') return value;
  } catch {
    // Reported below.
  }
  // Not echoed: an endpoint may carry credentials.
  read.problem(`${name} must be an http(s) URL`);
  return value;
}

function readProtocol(read: EnvReader): TracingConfig['protocol'] {
  const name = read.text('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL')
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  if (read.text(name) === 'grpc') {
    read.problem(`${name}=grpc is not supported: use http/protobuf (an OTLP/HTTP receiver, port 4318 by default)`);
    return 'http/protobuf';
  }
  return read.oneOf(name, OTLP_PROTOCOLS, 'http/protobuf');
}

function readRatio(read: EnvReader): number {
  const raw = read.text('OTEL_TRACES_SAMPLER_ARG');
  if (raw === undefined) return 1;
  const ratio = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
    read.problem(`OTEL_TRACES_SAMPLER_ARG must be a number between 0 and 1, got "${raw}"`);
    return 1;
  }
  return ratio;
}

/** OTEL_RESOURCE_ATTRIBUTES, with OTEL_SERVICE_NAME over its `service.name`, and a name by default. */
function readResource(read: EnvReader): Record<string, string> {
  const attributes = readPairs(read, 'OTEL_RESOURCE_ATTRIBUTES', 'an attribute');
  const serviceName = read.text('OTEL_SERVICE_NAME')?.trim();
  return { ...attributes, 'service.name': serviceName || attributes['service.name'] || DEFAULT_SERVICE_NAME };
}

/**
 * `key1=value1,key2=value2`, each value percent-decoded, as the specification writes headers and
 * resource attributes. A malformed entry is reported by its position only: header values are secrets.
 */
function readPairs(read: EnvReader, name: string, what: string): Record<string, string> {
  const pairs: Record<string, string> = {};
  read.list(name).forEach((entry, index) => {
    const at = entry.indexOf('=');
    const key = at > 0 ? entry.slice(0, at).trim() : '';
    let value: string | undefined;
    try {
      value = at > 0 ? decodeURIComponent(entry.slice(at + 1).trim()) : undefined;
    } catch {
      value = undefined;
    }
    if (!key || value === undefined) {
      read.problem(`${name} must list ${what} as key=value, comma-separated: entry ${index + 1} is not one`);
      return;
    }
    pairs[key] = value;
  });
  return pairs;
}
