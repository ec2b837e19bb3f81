import {
  context,
  INVALID_SPAN_CONTEXT,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';

export { SpanKind, type Attributes, type Span };

/**
 * The service's spans, made through the OpenTelemetry API. Without tracing (the default) no SDK is
 * loaded and `traced` runs its work directly; with it, src/core/tracing-sdk.ts registers the SDK and
 * turns this on. One process has one tracing, as the OpenTelemetry API has one global provider.
 */
let on = false;

/**
 * The service's tracer, asked of the registered provider each time: taken before the SDK registers, it
 * would stay the no-op one of this copy of the API (the built server bundles the API, while the SDK,
 * loaded from node_modules, brings its own copy; the two meet through the API's globals).
 */
export function tracer() {
  return trace.getTracer('post-scheduler');
}

/** Whether spans are being made (the SDK runs); for code that would prepare something only for them. */
export function tracingOn(): boolean {
  return on;
}

/** Called by the SDK's module as it registers, and again as it ends. */
export function setTracingOn(value: boolean): void {
  on = value;
}

const NO_SPAN = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

export interface SpanOptions {
  kind: SpanKind;
  attributes?: Attributes;
  /**
   * Where a trace may begin: an HTTP request, a job's run. Other spans (a transaction, a call to a
   * network) are made only inside a trace, so that the loops that poll the database every few hundred
   * milliseconds start none.
   */
  root?: boolean;
  /** The parent, instead of the active span: a job's run continues the trace that planned it. */
  parent?: Context;
}

/**
 * Runs `work` in a new span, which is the active one for everything `work` awaits; the span ends when
 * `work` settles, with an error status if it throws. Only the error's class or code is recorded: a
 * message may quote a URL or a network's answer.
 */
export function traced<T>(name: string, options: SpanOptions, work: (span: Span) => Promise<T>): Promise<T> {
  if (!on) return work(NO_SPAN);
  const parent = options.parent ?? context.active();
  if (!options.root && !trace.getSpan(parent)?.isRecording()) return work(NO_SPAN);
  return inSpan(
    tracer().startSpan(name, { kind: options.kind, attributes: options.attributes ?? {} }, parent),
    parent,
    work,
  );
}

async function inSpan<T>(span: Span, parent: Context, work: (span: Span) => Promise<T>): Promise<T> {
  try {
    return await context.with(trace.setSpan(parent, span), () => work(span));
  } catch (error) {
    failed(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** Marks a span failed by the error's kind: its code (`ECONNREFUSED`) or class name, never its message. */
export function failed(span: Span, error: unknown): void {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  markFailed(span, typeof code === 'string' ? code : error instanceof Error ? error.constructor.name : 'unknown');
}

/** Marks a span failed, with `error.type` saying how (an HTTP status, an error's code). */
export function markFailed(span: Span, errorType: string): void {
  span.setAttribute('error.type', errorType);
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/** The W3C trace context of the active span (`traceparent`, `tracestate`), to carry to another process. */
export type TraceCarrier = Record<string, string>;

/**
 * The active span's context as a carrier, or `undefined` when there is no trace to continue. A trace
 * the sampler dropped is carried too, with its decision, so that the job's run is dropped with it
 * instead of beginning a trace of its own: a trace is whole or absent.
 */
export function activeTraceCarrier(): TraceCarrier | undefined {
  const active = on ? trace.getSpanContext(context.active()) : undefined;
  if (!active || !trace.isSpanContextValid(active)) return undefined;
  const carrier: TraceCarrier = {};
  propagation.inject(context.active(), carrier);
  return Object.keys(carrier).length > 0 ? carrier : undefined;
}

/** The context a carrier names, as the parent of the span that continues its trace; a fresh trace without one. */
export function continuedFrom(carrier: unknown): Context {
  if (!on || typeof carrier !== 'object' || carrier === null) return ROOT_CONTEXT;
  const fields = Object.entries(carrier).filter((entry): entry is [string, string] => typeof entry[1] === 'string');
  return propagation.extract(ROOT_CONTEXT, Object.fromEntries(fields));
}
