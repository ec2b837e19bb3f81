import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Certificate } from './certificate.js';
import { eventually } from './eventually.js';
import { send } from './loopback-client.js';
import { TIMEOUTS } from './timeouts.js';

/** Debian's nginx (`apt-get install nginx`), run as a child process with a configuration of its own. */
export const NGINX_PATH = '/usr/sbin/nginx';

export const nginxInstalled = fs.existsSync(NGINX_PATH);

/**
 * The reverse-proxy tests run whenever nginx is installed. Without it they are skipped, loudly, on a
 * developer's machine; in CI (CI=true) they run and fail, so a missing proxy cannot pass unnoticed.
 */
export const skipNginxTests = !nginxInstalled && process.env.CI !== 'true';

if (skipNginxTests) {
  console.warn(
    `\n  Reverse-proxy tests SKIPPED: no nginx at ${NGINX_PATH}. Install it with \`apt-get install nginx\` to run them.\n`,
  );
}

export interface TlsProxyOptions {
  /** Its own directory: configuration, pid, logs and temporary files. */
  dir: string;
  hostName: string;
  /** The loopback port it listens on with TLS. */
  port: number;
  certificate: Certificate;
  /** The application's origin on plain http, e.g. `http://127.0.0.1:3000`. */
  upstream: string;
  /** The address its connections to the application come from (what the application's TRUST_PROXY names). */
  bindAddress: string;
}

export interface TlsProxy {
  /** What it wrote to its error log, for a failure's message. */
  log(): string;
  close(): Promise<void>;
}

/**
 * nginx terminating TLS in front of the application as an operator sets it up: the client's address
 * appended to X-Forwarded-For, the scheme in X-Forwarded-Proto, the Host passed on.
 */
export async function startTlsProxy(options: TlsProxyOptions): Promise<TlsProxy> {
  const { dir } = options;
  const errorLog = path.join(dir, 'nginx-error.log');
  const config = path.join(dir, 'nginx.conf');
  // Run as root, nginx would hand its workers to `nobody`, who cannot read the key in this directory.
  const user = process.getuid?.() === 0 ? `user ${os.userInfo().username};` : '';
  fs.writeFileSync(
    config,
    `daemon off;
${user}
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${errorLog} warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${dir}/client-body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  client_max_body_size 20m;
  server {
    listen 127.0.0.1:${options.port} ssl;
    server_name ${options.hostName};
    ssl_certificate ${options.certificate.certPath};
    ssl_certificate_key ${options.certificate.keyPath};
    ssl_protocols TLSv1.2 TLSv1.3;
    location / {
      proxy_pass ${options.upstream};
      proxy_bind ${options.bindAddress};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
    }
  }
}
`,
  );
  const child: ChildProcess = spawn(NGINX_PATH, ['-p', dir, '-c', config, '-e', errorLog], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  const log = () => `${output}${fs.existsSync(errorLog) ? fs.readFileSync(errorLog, 'utf8') : ''}`;

  const outcome = await eventually(
    async () => {
      if (child.exitCode !== null) return 'exited';
      await send(`https://${options.hostName}:${options.port}/healthz`, {
        connectTo: '127.0.0.1',
        ca: options.certificate.cert,
      });
      return 'answering';
    },
    { timeout: TIMEOUTS.process },
  ).catch((error: Error) => {
    throw new Error(`nginx did not answer: ${error.message}\n${log()}`, { cause: error });
  });
  if (outcome === 'exited') throw new Error(`nginx exited with ${child.exitCode}:\n${log()}`);
  return {
    log,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.on('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
