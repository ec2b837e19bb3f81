import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicApi } from './support/api.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { mp4WithDuration, png, zip } from './support/media-samples.js';
import { startRemoteServer, type RemoteServer } from './support/remote-server.js';
import { startTestServer, type TestServer } from './support/server.js';
import { dataOf, refusalOf, type TypedAnswer } from './support/typed-answers.js';
import { stringContaining } from './support/typed-matchers.js';

/** A server with the default policy: only public addresses, except an allow-listed 127.0.0.2. */
let strict: TestServer;
/** A server for tests and closed networks: private addresses allowed, short timeouts, small images. */
let open: TestServer;
let acme: TestOrganization;
let acmeOpen: TestOrganization;
let files: RemoteServer;
let loopbackOnly: RemoteServer;

const picture = png(3, 2);

// One server per hook: a hook's time is a server's start, however busy the machine.
beforeAll(async () => {
  strict = await startTestServer({ env: { MEDIA_FETCH_ALLOW_RANGES: '127.0.0.2' } });
});
beforeAll(async () => {
  open = await startTestServer({
    env: {
      MEDIA_FETCH_ALLOW_PRIVATE: 'true',
      MEDIA_FETCH_TIMEOUT_SECONDS: '1',
      MEDIA_FETCH_MAX_DURATION_SECONDS: '3',
      MEDIA_MAX_IMAGE_BYTES: '50000',
    },
  });
  acme = await createOrganization(strict.ctx.db, 'Acme');
  acmeOpen = await createOrganization(open.ctx.db, 'Acme');
  loopbackOnly = await startRemoteServer((_req, res) => res.end(picture));
  // The "public" file server of these tests: on 127.0.0.2, which `strict` is configured to allow.
  files = await startRemoteServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://files');
    if (url.pathname === '/to-loopback') {
      res.writeHead(302, { Location: `${loopbackOnly.origin}/secret.png` }).end();
    } else if (url.pathname === '/to-ipv6-loopback') {
      res.writeHead(307, { Location: `http://[::1]:${loopbackOnly.port}/secret.png` }).end();
    } else if (url.pathname === '/to-metadata') {
      res.writeHead(301, { Location: 'http://169.254.169.254/latest/meta-data/' }).end();
    } else if (url.pathname === '/to-file') {
      res.writeHead(302, { Location: 'file:///etc/passwd' }).end();
    } else if (url.pathname === '/moved') {
      res.writeHead(301, { Location: '/images/summer%20poster.png' }).end();
    } else {
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end(picture); // the remote type is not trusted either way
    }
  }, '127.0.0.2');
});
afterAll(async () => {
  await Promise.all([strict?.close(), open?.close(), files?.close(), loopbackOnly?.close()]);
});

function uploadFromUrl(server: TestServer, org: TestOrganization, url: string) {
  return publicApi(server, org.auth).POST('/public/v1/media/upload-from-url', { body: { url } });
}

function expectRefusal(answer: TypedAnswer<unknown>, status: number, code: string, message: string | RegExp) {
  const error = refusalOf(answer, status, code);
  if (typeof message === 'string') expect(error.message).toContain(message);
  else expect(error.message).toMatch(message);
  return error;
}

describe('upload from URL with the default address policy', () => {
  it('refuses loopback, private, link-local and metadata addresses without connecting', async () => {
    const cases: [string, string][] = [
      [`http://127.0.0.1:${loopbackOnly.port}/logo.png`, '127.0.0.1 is a loopback address'],
      [`http://localhost:${loopbackOnly.port}/logo.png`, 'is a loopback address (localhost)'],
      ['http://10.20.30.40/logo.png', '10.20.30.40 is a private address'],
      ['http://192.168.1.1/logo.png', '192.168.1.1 is a private address'],
      ['http://172.16.5.4/logo.png', '172.16.5.4 is a private address'],
      ['http://100.64.0.7/logo.png', '100.64.0.7 is a shared (carrier-grade NAT) address'],
      ['http://169.254.169.254/latest/meta-data/', '169.254.169.254 is a cloud metadata address'],
      ['http://169.254.10.10/logo.png', '169.254.10.10 is a link-local address'],
      [`http://[::1]:${loopbackOnly.port}/logo.png`, '::1 is a loopback address'],
      [`http://[::ffff:127.0.0.1]:${loopbackOnly.port}/logo.png`, '127.0.0.1 is a loopback address'],
      ['http://[::ffff:10.0.0.1]/logo.png', '10.0.0.1 is a private address'],
      ['http://[fe80::1]/logo.png', 'fe80::1 is a link-local address'],
      ['http://[fd12:3456::1]/logo.png', 'fd12:3456::1 is a unique-local address'],
      ['http://[fd00:ec2::254]/latest/meta-data/', 'fd00:ec2::254 is a cloud metadata address'],
      ['http://0.0.0.0/logo.png', '0.0.0.0 is an unspecified address'],
      ['http://224.0.0.1/logo.png', '224.0.0.1 is a multicast address'],
      ['http://255.255.255.255/logo.png', '255.255.255.255 is a broadcast address'],
      // Other spellings of 127.0.0.1, normalised by the URL parser before the check.
      [`http://2130706433:${loopbackOnly.port}/logo.png`, '127.0.0.1 is a loopback address'],
      [`http://0x7f.1:${loopbackOnly.port}/logo.png`, '127.0.0.1 is a loopback address'],
    ];
    for (const [url, reason] of cases) {
      const error = expectRefusal(
        await uploadFromUrl(strict, acme, url),
        422,
        'unprocessable',
        'does not download from',
      );
      expect(error.details, url).toEqual([{ path: 'url', message: stringContaining(reason) }]);
    }
    expect(loopbackOnly.requests).toEqual([]);
  });

  it('refuses schemes other than http and https', async () => {
    for (const url of [
      'ftp://files.example.org/logo.png',
      'file:///etc/passwd',
      'data:image/png;base64,iVBORw0KGgo=',
    ]) {
      const error = expectRefusal(await uploadFromUrl(strict, acme, url), 422, 'unprocessable', 'cannot be downloaded');
      expect(error.details?.[0]?.message).toMatch(/the scheme (ftp|file|data) is not http or https/);
    }
  });

  it('downloads from an allowed server and names the media after the URL', async () => {
    const media = dataOf(await uploadFromUrl(strict, acme, `${files.origin}/moved`), 201);
    expect(media).toMatchObject({ fileName: 'moved', contentType: 'image/png', kind: 'image', size: picture.length });
    const download = await fetch(media.url);
    expect(Buffer.from(await download.arrayBuffer()).equals(picture)).toBe(true);
    // Its pixels, read from its header, for the networks' aspect ratios.
    const stored = await strict.ctx.db
      .selectFrom('media')
      .select(['width', 'height'])
      .where('id', '=', media.id)
      .executeTakeFirstOrThrow();
    expect(stored).toEqual({ width: 3, height: 2 });
  });

  it('checks every redirect target again and refuses one that leads inside', async () => {
    const before = loopbackOnly.requests.length;
    for (const [path, reason] of [
      ['/to-loopback', '127.0.0.1 is a loopback address'],
      ['/to-ipv6-loopback', '::1 is a loopback address'],
      ['/to-metadata', '169.254.169.254 is a cloud metadata address'],
    ]) {
      const error = expectRefusal(
        await uploadFromUrl(strict, acme, `${files.origin}${path}`),
        422,
        'unprocessable',
        reason!,
      );
      expect(error.details).toEqual([{ path: 'url', message: reason }]);
    }
    expectRefusal(
      await uploadFromUrl(strict, acme, `${files.origin}/to-file`),
      422,
      'unprocessable',
      'the scheme file',
    );
    expect(loopbackOnly.requests.length).toBe(before);
  });
});

describe('upload from URL where private addresses are allowed', () => {
  let remote: RemoteServer;
  const video = mp4WithDuration(33.3, { mdatBytes: 200_000 });
  let trickles = 0;
  let streamedBytes = 0;

  beforeAll(async () => {
    remote = await startRemoteServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://remote');
      const hops = Number(url.searchParams.get('hops') ?? 0);
      switch (url.pathname) {
        case '/redirect':
          if (hops > 0) res.writeHead(302, { Location: `/redirect?hops=${hops - 1}` }).end();
          else res.end(picture);
          return;
        case '/missing.png':
          res.writeHead(404).end('not here');
          return;
        case '/notes.zip':
          res.end(zip());
          return;
        case '/clip.mp4':
          res.end(video);
          return;
        case '/huge.png': // announces its size
          res.writeHead(200, { 'Content-Length': String(10_000_000) });
          res.write(Buffer.concat([picture, Buffer.alloc(8192)]));
          return; // sends no more: once the type is known, the announced length alone must be refused
        case '/endless.png': {
          // No Content-Length: the server streams until it is stopped; the download must cut it off.
          res.writeHead(200, { 'Content-Type': 'image/png' });
          res.write(picture);
          const chunk = Buffer.alloc(16 * 1024);
          const pump = () => {
            while (!res.destroyed && streamedBytes < 50_000_000) {
              streamedBytes += chunk.length;
              if (!res.write(chunk)) return void res.once('drain', pump);
            }
            res.end();
          };
          pump();
          return;
        }
        case '/silent.png':
          return; // accepts the request and never answers
        case '/stalls.png':
          res.writeHead(200);
          res.write(picture.subarray(0, 10)); // then nothing more
          return;
        case '/trickle.png': {
          res.writeHead(200);
          res.write(picture);
          const timer = setInterval(() => {
            trickles += 1;
            if (res.destroyed) clearInterval(timer);
            else res.write(Buffer.alloc(1));
          }, 200);
          res.on('close', () => clearInterval(timer));
          return;
        }
        default:
          res.writeHead(404).end();
      }
    });
  });
  afterAll(() => remote?.close());

  it('downloads a video from a loopback server', async () => {
    const answer = await uploadFromUrl(open, acmeOpen, `${remote.origin}/clip.mp4?version=2`);
    expect(dataOf(answer, 201)).toMatchObject({
      fileName: 'clip.mp4',
      contentType: 'video/mp4',
      kind: 'video',
      size: video.length,
      durationSec: 33.3,
    });
  });

  it('still refuses cloud metadata addresses', async () => {
    expectRefusal(
      await uploadFromUrl(open, acmeOpen, 'http://169.254.169.254/latest/meta-data/'),
      422,
      'unprocessable',
      'cloud metadata',
    );
    expectRefusal(
      await uploadFromUrl(open, acmeOpen, 'http://[fd00:ec2::254]/'),
      422,
      'unprocessable',
      'cloud metadata',
    );
  });

  it('follows up to 5 redirects and refuses a sixth', async () => {
    dataOf(await uploadFromUrl(open, acmeOpen, `${remote.origin}/redirect?hops=5`), 201);
    const error = expectRefusal(
      await uploadFromUrl(open, acmeOpen, `${remote.origin}/redirect?hops=6`),
      422,
      'unprocessable',
      'more than 5 redirects',
    );
    expect(error.details).toEqual([{ path: 'url', message: 'more than 5 redirects' }]);
  });

  it('refuses an error status of the remote server', async () => {
    expectRefusal(
      await uploadFromUrl(open, acmeOpen, `${remote.origin}/missing.png`),
      422,
      'unprocessable',
      `The server at ${remote.origin} answered 404`,
    );
  });

  it('refuses a file that is not an accepted type, whatever its name (415)', async () => {
    expectRefusal(
      await uploadFromUrl(open, acmeOpen, `${remote.origin}/notes.zip`),
      415,
      'unsupported_media_type',
      'The file is application/zip, which is not accepted',
    );
  });

  it('refuses a file over the size limit of its type from its announced length (413)', async () => {
    expectRefusal(
      await uploadFromUrl(open, acmeOpen, `${remote.origin}/huge.png`),
      413,
      'payload_too_large',
      'Images may be at most 50000 bytes; this one has 10000000.',
    );
  });

  it('cuts off a download that grows past the limit instead of reading it to the end (413)', async () => {
    expectRefusal(
      await uploadFromUrl(open, acmeOpen, `${remote.origin}/endless.png`),
      413,
      'payload_too_large',
      'Images may be at most 50000 bytes; this one has more.',
    );
    // The remote server could have sent 50 MB; the connection was closed long before.
    expect(streamedBytes).toBeLessThan(10_000_000);
  });

  it('stops waiting for a server that does not answer, or stops sending', async () => {
    expectRefusal(
      await uploadFromUrl(open, acmeOpen, `${remote.origin}/silent.png`),
      422,
      'unprocessable',
      'The server sent nothing for 1 seconds',
    );
    expectRefusal(
      await uploadFromUrl(open, acmeOpen, `${remote.origin}/stalls.png`),
      422,
      'unprocessable',
      'The server sent nothing for 1 seconds',
    );
  });

  it('stops a download that takes longer than the whole-download limit', async () => {
    expectRefusal(
      await uploadFromUrl(open, acmeOpen, `${remote.origin}/trickle.png`),
      422,
      'unprocessable',
      'took longer than 3 seconds',
    );
    expect(trickles).toBeGreaterThan(5);
  });

  it('leaves no media and no staged file behind after refusals', async () => {
    const { readdirSync, existsSync } = await import('node:fs');
    const staging = `${open.ctx.config.dataDir}/tmp`;
    expect(existsSync(staging) ? readdirSync(staging) : []).toEqual([]);
    const rows = await open.ctx.db
      .selectFrom('media')
      .select('file_name')
      .where('organization_id', '=', acmeOpen.id)
      .execute();
    expect(rows.map((row) => row.file_name).sort()).toEqual(['clip.mp4', 'redirect']);
  });
});
