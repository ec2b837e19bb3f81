import { activeTraceCarrier, continuedFrom, SpanKind, traced, type TraceCarrier } from '../core/tracing.js';

/**
 * The spans of jobs. A job planned inside a trace (a request's transaction, a publication that plans
 * its retry) carries the W3C trace context of its `send` span in its data, so that its run, in
 * whichever worker process fetches it, continues that trace; a job planned outside one (the
 * reconciliation, a schedule) begins a trace when it runs. With tracing off a job carries nothing.
 */

/** A job's data as stored. */
type Traced<Data> = Data & { trace?: TraceCarrier };

/** The messaging attributes of OpenTelemetry's semantic conventions. */
function jobAttributes(queue: string, operation: 'send' | 'process') {
  return {
    'messaging.system': 'pg-boss',
    'messaging.destination.name': queue,
    'messaging.operation.type': operation,
    'messaging.operation.name': operation,
  };
}

/**
 * Planning `count` jobs of `queue`, in a `send` span inside a trace; `send` gets the data with the
 * trace context added (`addTrace`).
 */
export function sending<T>(
  queue: string,
  count: number,
  send: (addTrace: <Data extends object>(data: Data) => Traced<Data>) => Promise<T>,
): Promise<T> {
  const attributes = {
    ...jobAttributes(queue, 'send'),
    ...(count > 1 ? { 'messaging.batch.message_count': count } : {}),
  };
  return traced(`send ${queue}`, { kind: SpanKind.PRODUCER, attributes }, () => {
    const trace = activeTraceCarrier();
    return send((data) => (trace ? { ...data, trace } : data));
  });
}

/** A job's run, in a `process` span that continues the trace it was planned in, or begins one. */
export function processing<T>(queue: string, job: { id: string; data: unknown }, run: () => Promise<T>): Promise<T> {
  const attributes = { ...jobAttributes(queue, 'process'), 'messaging.message.id': job.id };
  const parent = continuedFrom((job.data as Traced<object> | undefined)?.trace);
  return traced(`process ${queue}`, { kind: SpanKind.CONSUMER, root: true, parent, attributes }, run);
}

/** A batch of jobs handed to one handler (the schedules' jobs), in a `process` span that begins a trace. */
export function processingBatch<T>(queue: string, count: number, run: () => Promise<T>): Promise<T> {
  const attributes = { ...jobAttributes(queue, 'process'), 'messaging.batch.message_count': count };
  return traced(`process ${queue}`, { kind: SpanKind.CONSUMER, root: true, attributes }, run);
}
