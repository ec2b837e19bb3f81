import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RemoteServer {
  /** e.g. `http://127.0.0.1:41234` or `http://[::1]:41234`. */
  origin: string;
  port: number;
  /** Requests received, in order (method, path and Host header). */
  requests: { method: string; path: string; host: string | undefined }[];
  close(): Promise<void>;
}

/** A real HTTP server on a loopback address, standing in for a remote web server that hosts files. */
export async function startRemoteServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  host = '127.0.0.1',
  /** Any free one by default; a given one lets servers on several addresses share a port. */
  port = 0,
): Promise<RemoteServer> {
  const requests: RemoteServer['requests'] = [];
  const server = http.createServer((req, res) => {
    requests.push({ method: req.method ?? '', path: req.url ?? '', host: req.headers.host });
    handler(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    origin: `http://${host.includes(':') ? `[${host}]` : host}:${bound}`,
    port: bound,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
