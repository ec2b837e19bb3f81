import { context, diag, DiagLogLevel, propagation, trace, type DiagLogger } from '@opentelemetry/api';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { core, NodeSDK, resources } from '@opentelemetry/sdk-node';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
} from '@opentelemetry/sdk-trace';
import type { TracingConfig } from './config/tracing.js';
import type { Logger } from './logger.js';
import { setTracingOn, tracingOn } from './tracing.js';

/** The running SDK: `shutdown` sends the spans still waiting, then stops making them. */
export interface RunningTracing {
  shutdown(): Promise<void>;
}

type ExporterOptions = NonNullable<ConstructorParameters<typeof OtlpProtobufExporter>[0]>;

/**
 * Starts OpenTelemetry's Node SDK for traces only, with everything it would otherwise read from the
 * environment given from the configuration (which read and checked it): the OTLP/HTTP exporter, the
 * sampler, the resource, the W3C trace context. No metrics, no logs, no automatic instrumentation:
 * the service makes its own spans (src/core/tracing.ts). This module is imported only when tracing is
 * on, so without it nothing of the SDK is loaded.
 */
export function startTracing(config: TracingConfig, logger: Logger): RunningTracing {
  if (tracingOn()) throw new Error('tracing is already running in this process');
  const options: ExporterOptions = {
    url: config.endpoint,
    headers: config.headers,
    timeoutMillis: config.timeoutMs,
    compression: config.compression as ExporterOptions['compression'],
  };
  const exporter = config.protocol === 'http/json' ? new OtlpJsonExporter(options) : new OtlpProtobufExporter(options);
  const sdk = new NodeSDK({
    // The SDK's own attributes (`telemetry.sdk.*`), and the configuration's (`service.name` …) over them.
    resource: resources.defaultResource().merge(resources.resourceFromAttributes(config.resource)),
    autoDetectResources: false,
    spanProcessors: [
      new BatchSpanProcessor({
        exporter,
        scheduledDelayMillis: config.scheduleDelayMs,
        maxQueueSize: config.maxQueueSize,
        maxExportBatchSize: Math.min(512, config.maxQueueSize),
        exportTimeoutMillis: config.timeoutMs,
      }),
    ],
    sampler: samplerOf(config),
    // Jobs carry the W3C trace context only, no baggage (src/jobs/job-tracing.ts).
    textMapPropagator: new core.W3CTraceContextPropagator(),
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [],
  });
  sdk.start();
  // The SDK's own troubles (a receiver that refuses or cannot be reached) reach the service's log.
  diag.setLogger(diagnostics(logger), DiagLogLevel.WARN);
  setTracingOn(true);
  logger.info(
    { endpoint: new URL(config.endpoint).origin, protocol: config.protocol, sampler: config.sampler },
    'sending traces',
  );
  return {
    shutdown: async () => {
      setTracingOn(false);
      try {
        await sdk.shutdown();
      } catch (error) {
        // The receiver refused or could not be reached: the spans are lost, the shutdown goes on.
        logger.warn({ component: 'opentelemetry', error: (error as Error).message }, 'could not send the last spans');
      } finally {
        // The API's globals go too, so that a service composed again in this process (the tests) starts afresh.
        trace.disable();
        context.disable();
        propagation.disable();
        diag.disable();
      }
    },
  };
}

function samplerOf({ sampler, samplerRatio }: TracingConfig): Sampler {
  const root = sampler.endsWith('always_on')
    ? new AlwaysOnSampler()
    : sampler.endsWith('always_off')
      ? new AlwaysOffSampler()
      : new TraceIdRatioBasedSampler(samplerRatio);
  return sampler.startsWith('parentbased_') ? new ParentBasedSampler({ root }) : root;
}

/**
 * The SDK's diagnostics at `warn` and `error`, one line each. A failed export arrives as the error
 * written out as JSON, stack and all: only its message is kept (never the rest, which may hold the
 * receiver's answer).
 */
function diagnostics(logger: Logger): DiagLogger {
  const quiet = () => {};
  const messageOf = (message: string) => {
    try {
      const parsed = JSON.parse(message) as { message?: unknown };
      if (typeof parsed.message === 'string') return parsed.message;
    } catch {
      // Not an error written out: the message itself.
    }
    return message;
  };
  return {
    error: (message) => logger.error({ component: 'opentelemetry' }, `OpenTelemetry: ${messageOf(message)}`),
    warn: (message) => logger.warn({ component: 'opentelemetry' }, `OpenTelemetry: ${messageOf(message)}`),
    info: quiet,
    debug: quiet,
    verbose: quiet,
  };
}
