import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/** An attribute's value as OTLP carries it, its 64-bit integers as numbers. */
export type AttributeValue = string | number | boolean;

/** A span as an OTLP/HTTP receiver gets it, with the attributes of the resource it came from. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Empty for the span that begins a trace. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, AttributeValue>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  resource: Record<string, AttributeValue>;
}

/** One export request, as received. */
export interface ReceivedExport {
  path: string;
  contentType: string;
  headers: http.IncomingHttpHeaders;
}

/**
 * A stand-in for an OpenTelemetry collector on a loopback port: it takes OTLP/HTTP exports of traces
 * (`POST /v1/traces`) in both encodings, http/json and http/protobuf (read with the small protobuf
 * reader below, after OTLP's `trace.proto`), gzip-compressed or not, and keeps their spans.
 */
export interface OtlpReceiver {
  /** The origin, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  url: string;
  spans: ReceivedSpan[];
  exports: ReceivedExport[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const exports: ReceivedExport[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const contentType = req.headers['content-type'] ?? '';
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      exports.push({ path: req.url ?? '', contentType, headers: req.headers });
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      if (contentType.startsWith('application/json')) {
        spans.push(...spansOfJson(JSON.parse(body.toString('utf8')) as JsonExport));
        res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
      } else if (contentType.startsWith('application/x-protobuf')) {
        spans.push(...spansOfProtobuf(body));
        // An empty ExportTraceServiceResponse: no field set.
        res.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end();
      } else {
        res.writeHead(415).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    exports,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// OTLP/JSON: https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding (ids as hex strings).
interface JsonValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
}
type JsonAttributes = { key: string; value: JsonValue }[] | undefined;
interface JsonExport {
  resourceSpans?: {
    resource?: { attributes?: JsonAttributes };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind?: number;
        attributes?: JsonAttributes;
        status?: { code?: number };
      }[];
    }[];
  }[];
}

function spansOfJson(body: JsonExport): ReceivedSpan[] {
  const attributes = (list: JsonAttributes) =>
    Object.fromEntries((list ?? []).map(({ key, value }) => [key, jsonValue(value)]));
  return (body.resourceSpans ?? []).flatMap((resourceSpans) => {
    const resource = attributes(resourceSpans.resource?.attributes);
    return (resourceSpans.scopeSpans ?? []).flatMap((scope) =>
      (scope.spans ?? []).map((span) => ({
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId ?? '',
        name: span.name,
        kind: span.kind ?? 0,
        attributes: attributes(span.attributes),
        statusCode: span.status?.code ?? 0,
        resource,
      })),
    );
  });
}

function jsonValue(value: JsonValue): AttributeValue {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  return '';
}

// OTLP/protobuf: the field numbers of opentelemetry/proto/trace/v1/trace.proto and common.proto.
const EXPORT = { resourceSpans: 1 };
const RESOURCE_SPANS = { resource: 1, scopeSpans: 2 };
const RESOURCE = { attributes: 1 };
const SCOPE_SPANS = { spans: 2 };
const SPAN = { traceId: 1, spanId: 2, parentSpanId: 4, name: 5, kind: 6, attributes: 9, status: 15 };
const STATUS = { code: 3 };
const KEY_VALUE = { key: 1, value: 2 };
const ANY_VALUE = { string: 1, bool: 2, int: 3, double: 4 };

function spansOfProtobuf(body: Buffer): ReceivedSpan[] {
  return messages(body, EXPORT.resourceSpans).flatMap((resourceSpans) => {
    const [resourceMessage] = messages(resourceSpans, RESOURCE_SPANS.resource);
    const resource = resourceMessage ? protobufAttributes(resourceMessage, RESOURCE.attributes) : {};
    return messages(resourceSpans, RESOURCE_SPANS.scopeSpans).flatMap((scope) =>
      messages(scope, SCOPE_SPANS.spans).map((span) => {
        const [status] = messages(span, SPAN.status);
        return {
          traceId: bytes(span, SPAN.traceId).toString('hex'),
          spanId: bytes(span, SPAN.spanId).toString('hex'),
          parentSpanId: bytes(span, SPAN.parentSpanId).toString('hex'),
          name: bytes(span, SPAN.name).toString('utf8'),
          kind: Number(integer(span, SPAN.kind)),
          attributes: protobufAttributes(span, SPAN.attributes),
          statusCode: status ? Number(integer(status, STATUS.code)) : 0,
          resource,
        };
      }),
    );
  });
}

function protobufAttributes(message: Buffer, field: number): Record<string, AttributeValue> {
  return Object.fromEntries(
    messages(message, field).map((keyValue) => {
      const [value] = messages(keyValue, KEY_VALUE.value);
      return [bytes(keyValue, KEY_VALUE.key).toString('utf8'), value ? protobufValue(value) : ''];
    }),
  );
}

function protobufValue(value: Buffer): AttributeValue {
  for (const { field, wireType, data } of fields(value)) {
    if (field === ANY_VALUE.string && wireType === 2) return (data as Buffer).toString('utf8');
    if (field === ANY_VALUE.bool && wireType === 0) return (data as bigint) !== 0n;
    if (field === ANY_VALUE.int && wireType === 0) return Number(BigInt.asIntN(64, data as bigint));
    if (field === ANY_VALUE.double && wireType === 1) return (data as Buffer).readDoubleLE(0);
  }
  return '';
}

/** Every length-delimited field `field` of a message, in order (a repeated or embedded message). */
function messages(message: Buffer, field: number): Buffer[] {
  return fields(message)
    .filter((entry) => entry.field === field && entry.wireType === 2)
    .map((entry) => entry.data as Buffer);
}

function bytes(message: Buffer, field: number): Buffer {
  return messages(message, field).at(-1) ?? Buffer.alloc(0);
}

function integer(message: Buffer, field: number): bigint {
  const entry = fields(message).findLast((candidate) => candidate.field === field && candidate.wireType === 0);
  return (entry?.data as bigint | undefined) ?? 0n;
}

/** The fields of a message in protobuf's wire format: varints, 64- and 32-bit values, length-delimited bytes. */
function fields(message: Buffer): { field: number; wireType: number; data: bigint | Buffer }[] {
  const found: { field: number; wireType: number; data: bigint | Buffer }[] = [];
  let at = 0;
  const varint = (): bigint => {
    let value = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const byte = message[at++];
      if (byte === undefined) throw new Error('a protobuf varint runs past the end of its message');
      value |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return value;
    }
  };
  const take = (length: number): Buffer => {
    if (at + length > message.length) throw new Error('a protobuf field runs past the end of its message');
    const data = message.subarray(at, at + length);
    at += length;
    return data;
  };
  while (at < message.length) {
    const key = Number(varint());
    const wireType = key & 7;
    const field = key >>> 3;
    if (wireType === 0) found.push({ field, wireType, data: varint() });
    else if (wireType === 1) found.push({ field, wireType, data: take(8) });
    else if (wireType === 2) found.push({ field, wireType, data: take(Number(varint())) });
    else if (wireType === 5) found.push({ field, wireType, data: take(4) });
    else throw new Error(`protobuf wire type ${wireType} is not one OTLP uses`);
  }
  return found;
}
