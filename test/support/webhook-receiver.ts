import http, { type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually } from './eventually.js';
import { TIMEOUTS } from './timeouts.js';

/** A request the receiver got: its headers and the body as sent. */
export interface ReceivedWebhook {
  headers: Record<string, string>;
  body: string;
  at: number;
}

/**
 * A webhook receiver on a loopback port, as an integrator would run one: it records every request
 * and answers 200, unless told to answer otherwise for the next ones.
 */
export interface WebhookReceiver {
  url: string;
  received: ReceivedWebhook[];
  /** The next answers, in order (a status, or `redirect` to a URL); then 200 again. */
  answerNext(...answers: (number | { redirect: string })[]): void;
  /** Answers after `ms` from now on. */
  delay(ms: number): void;
  /** Resolves once `count` requests arrived in all (within TIMEOUTS.eventually unless told). */
  untilReceived(count: number, timeoutMs?: number): Promise<ReceivedWebhook[]>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(host = '127.0.0.1'): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const answers: (number | { redirect: string })[] = [];
  let delayMs = 0;
  const server = http.createServer((req, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const respond = () => {
        received.push({
          headers: req.headers as Record<string, string>,
          body: Buffer.concat(chunks).toString('utf8'),
          at: Date.now(),
        });
        const answer = answers.shift() ?? 200;
        if (typeof answer === 'object') {
          res.writeHead(302, { Location: answer.redirect });
          res.end();
        } else {
          res.writeHead(answer, { 'Content-Type': 'text/plain' });
          res.end(answer === 200 ? 'ok' : `failing with ${answer}`);
        }
      };
      if (delayMs > 0) setTimeout(respond, delayMs);
      else respond();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/hooks`,
    received,
    delay: (ms) => {
      delayMs = ms;
    },
    answerNext: (...next) => {
      answers.push(...next);
    },
    untilReceived: (count, timeoutMs = TIMEOUTS.eventually) =>
      eventually(
        () => {
          if (received.length < count) throw new Error(`the receiver got ${received.length} of ${count} requests`);
          return received;
        },
        { timeout: timeoutMs },
      ),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
