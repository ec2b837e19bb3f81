import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for the sandbox network on a loopback port, speaking its API as the sandbox adapter
 * calls it (`POST /sandbox/api/releases`, `GET /sandbox/api/releases/by-key/{key}`), that records
 * every publication it receives and can be told to fail in each of the ways a network fails.
 *
 * Like a real network, it publishes what it received even when the caller went away before the
 * answer (a worker that died or stopped mid-call): the release exists, and asking about its key
 * finds it.
 */
export interface FakeNetwork {
  url: string;
  /**
   * Publications received and published, by key (post id and attempt, and part in a thread), in order:
   * the release id it answered, the thread's part it was (1, the post's own content) and the release
   * it replies to (null for a first part).
   */
  published: {
    key: string;
    postId: string;
    channelId: string;
    releaseId: string;
    part: number;
    replyTo: string | null;
    at: number;
  }[];
  /** How many publications each post got: more than one is a duplicate on the network. */
  publicationsOf(postId: string): number;
  /** Publication requests for a key that was published already: a publication sent again. */
  resends: string[];
  /**
   * The next `count` publication requests are answered `status` (503 a passing failure, 422 a
   * refusal, 401 bad credentials).
   */
  failNext(count: number, status: number, body?: object): void;
  /** Publications are answered after `ms`. */
  delay(ms: number): void;
  /**
   * The next `count` publications (of part `part` alone, when given: 1 the post's own content, then its
   * thread's parts and its first comment) are published, but the connection is cut before the answer.
   */
  cutAfterPublishing(count: number, part?: number): void;
  /** Questions about a key are answered `status` (410: the network no longer knows; 503: a passing failure). */
  lookupsAnswer(status: number | undefined): void;
  /** The most publications of one channel that were in progress at once. */
  maxConcurrentPerChannel(): number;
  close(): Promise<void>;
}

export async function startFakeNetwork(): Promise<FakeNetwork> {
  const published: FakeNetwork['published'] = [];
  const resends: string[] = [];
  const releases = new Map<string, string>();
  const failures: { status: number; body: object }[] = [];
  let delayMs = 0;
  let cuts = 0;
  let cutPart: number | undefined;
  let lookupStatus: number | undefined;
  const inFlight = new Map<string, number>();
  let maxInFlight = 0;
  let origin = '';

  const answer = (res: ServerResponse, status: number, body: object) => {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  const publish = async (req: IncomingMessage, res: ServerResponse, text: string) => {
    const body = JSON.parse(text) as { key: string; channelId: string; replyTo?: string | null; part?: number };
    const channel = body.channelId;
    inFlight.set(channel, (inFlight.get(channel) ?? 0) + 1);
    maxInFlight = Math.max(maxInFlight, inFlight.get(channel)!);
    try {
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      const failure = failures.shift();
      if (failure) return answer(res, failure.status, failure.body);
      let id = releases.get(body.key);
      if (id) resends.push(body.key);
      if (!id) {
        id = `rel_fake${published.length + 1}`;
        releases.set(body.key, id);
        published.push({
          key: body.key,
          postId: body.key.split(':')[0]!,
          channelId: channel,
          releaseId: id,
          part: body.part ?? 1,
          replyTo: body.replyTo ?? null,
          at: Date.now(),
        });
      }
      if (cuts > 0 && (cutPart === undefined || cutPart === (body.part ?? 1))) {
        cuts -= 1;
        req.socket.destroy();
        return;
      }
      answer(res, 201, { id, url: `${origin}/releases/${id}` });
    } finally {
      inFlight.set(channel, inFlight.get(channel)! - 1);
    }
  };

  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      const url = req.url ?? '';
      if (req.method === 'POST' && url === '/sandbox/api/releases') {
        publish(req, res, text).catch(() => res.destroy());
        return;
      }
      const byKey = /^\/sandbox\/api\/releases\/by-key\/(.+)$/.exec(url);
      if (req.method === 'GET' && byKey) {
        if (lookupStatus !== undefined)
          return answer(res, lookupStatus, { error: 'unavailable', message: `The network answered ${lookupStatus}.` });
        const id = releases.get(decodeURIComponent(byKey[1]!));
        return id
          ? answer(res, 200, { id, url: `${origin}/releases/${id}` })
          : answer(res, 404, { error: 'not_found', message: 'Nothing with this key.' });
      }
      answer(res, 404, { error: 'not_found', message: 'No such endpoint.' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: origin,
    published,
    publicationsOf: (postId) => published.filter((p) => p.postId === postId).length,
    resends,
    failNext: (count, status, body = { error: 'failure', message: `The network answered ${status}.` }) => {
      for (let i = 0; i < count; i++) failures.push({ status, body });
    },
    delay: (ms) => {
      delayMs = ms;
    },
    cutAfterPublishing: (count, part) => {
      cuts = count;
      cutPart = part;
    },
    lookupsAnswer: (status) => {
      lookupStatus = status;
    },
    maxConcurrentPerChannel: () => maxInFlight,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
