import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface SendOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** The address the request comes from (any of 127.0.0.0/8 on loopback): another client to the server. */
  localAddress?: string;
  /** Connects here instead of resolving the URL's host name (a test host name, as a hosts file would). */
  connectTo?: string;
  /** The certificate authority trusted for https (the test's own). */
  ca?: string;
}

/**
 * One HTTP or HTTPS request with what fetch cannot choose: the client address it comes from, the
 * address it connects to, the CA it trusts. A fresh connection each time; redirects are not followed.
 */
export function send(url: string, options: SendOptions = {}): Promise<Answer> {
  const target = new URL(url);
  const client = target.protocol === 'https:' ? https : http;
  const { connectTo } = options;
  const lookup = connectTo
    ? (((_hostname: string, lookupOptions: { all?: boolean }, callback: (...args: unknown[]) => void) => {
        if (lookupOptions.all) callback(null, [{ address: connectTo, family: 4 }]);
        else callback(null, connectTo, 4);
      }) as unknown as LookupFunction)
    : undefined;
  return new Promise((resolve, reject) => {
    const request = client.request(
      target,
      {
        method: options.method ?? 'GET',
        headers: {
          ...(options.body !== undefined ? { 'Content-Length': String(Buffer.byteLength(options.body)) } : {}),
          ...options.headers,
        },
        agent: false,
        ...(options.localAddress ? { localAddress: options.localAddress } : {}),
        ...(lookup ? { lookup } : {}),
        ...(options.ca ? { ca: options.ca } : {}),
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(options.body);
  });
}

/** The name=value pairs of an answer's Set-Cookie headers, as a Cookie header sends them back. */
export function cookiesOf(answer: Answer): string {
  return (answer.headers['set-cookie'] ?? []).map((line) => line.split(';')[0]).join('; ');
}

/** A form body, as a browser sends it. */
export function formPost(fields: Record<string, string>, headers: Record<string, string> = {}): SendOptions {
  return {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields).toString(),
  };
}
