import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicApi } from './support/api.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { jpeg, mp4, png } from './support/media-samples.js';
import { startS3Server, type TestS3Server } from './support/s3-server.js';
import { startTestServer, type TestServer } from './support/server.js';
import { dataOf, refusalOf } from './support/typed-answers.js';
import { startUpload } from './support/uploads.js';

let s3: TestS3Server;
let server: TestServer;
let acme: TestOrganization;

beforeAll(async () => {
  s3 = await startS3Server();
  server = await startTestServer({ env: { ...s3.env, MEDIA_FETCH_ALLOW_PRIVATE: 'true' } });
  acme = await createOrganization(server.ctx.db, 'Acme');
});
afterAll(async () => {
  await server?.close();
  await s3?.close();
});

/** Step 3 of the signed upload. */
const complete = (uploadId: string) =>
  publicApi(server, acme.auth).POST('/public/v1/media/uploads/{uploadId}/complete', { params: { path: { uploadId } } });

describe('signed upload on S3-compatible storage', () => {
  it('PUTs straight to the bucket with a presigned URL, completes, and serves a presigned download', async () => {
    const bytes = mp4(10_000);
    const upload = await startUpload(server, acme, 'trailer.mp4', 'video/mp4', bytes.length);
    const url = new URL(upload.uploadUrl);
    expect(url.origin).toBe(s3.endpoint);
    expect(url.pathname).toBe(`/${s3.bucket}/uploads/${acme.id}/${upload.uploadId}`);
    expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('content-length;content-type;host');
    expect(upload.headers).toEqual({ 'Content-Type': 'video/mp4', 'Content-Length': '10000' });

    const put = await fetch(upload.uploadUrl, { method: 'PUT', headers: upload.headers, body: bytes });
    expect(put.status).toBe(200);
    expect(await s3.has(`uploads/${acme.id}/${upload.uploadId}`)).toBe(true);

    const media = dataOf(await complete(upload.uploadId));
    expect(media).toMatchObject({ fileName: 'trailer.mp4', contentType: 'video/mp4', kind: 'video', size: 10_000 });
    expect(await s3.has(`media/${acme.id}/${media.id}`)).toBe(true);
    expect(await s3.has(`uploads/${acme.id}/${upload.uploadId}`)).toBe(false);

    const download = await fetch(media.url);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('video/mp4');
    expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);

    expect(dataOf(await complete(upload.uploadId)).id).toBe(media.id);

    const deleted = await publicApi(server, acme.auth).DELETE('/public/v1/media/{id}', {
      params: { path: { id: media.id } },
    });
    dataOf(deleted, 204);
    expect(await s3.has(`media/${acme.id}/${media.id}`)).toBe(false);
  });

  it('is refused by the storage when the URL is altered or the body has another size or type', async () => {
    const bytes = png();
    const upload = await startUpload(server, acme, 'logo.png', 'image/png', bytes.length);
    const tampered = new URL(upload.uploadUrl);
    tampered.searchParams.set('X-Amz-Signature', '0'.repeat(64));

    const attempts = [
      fetch(tampered, { method: 'PUT', headers: upload.headers, body: bytes }),
      fetch(upload.uploadUrl, {
        method: 'PUT',
        headers: { 'Content-Type': 'image/png' },
        body: Buffer.concat([bytes, bytes]),
      }),
      fetch(upload.uploadUrl, { method: 'PUT', headers: { 'Content-Type': 'image/jpeg' }, body: bytes }),
    ];
    for (const response of await Promise.all(attempts)) {
      expect(response.status).toBe(403);
      expect(await response.text()).toContain('SignatureDoesNotMatch');
    }
    expect(await s3.has(`uploads/${acme.id}/${upload.uploadId}`)).toBe(false);
    refusalOf(await complete(upload.uploadId), 409);
  });

  it('refuses bytes of another type than declared and deletes them from the bucket', async () => {
    const bytes = jpeg(3000);
    const upload = await startUpload(server, acme, 'photo.png', 'image/png', bytes.length);
    expect((await fetch(upload.uploadUrl, { method: 'PUT', headers: upload.headers, body: bytes })).status).toBe(200);

    expect(refusalOf(await complete(upload.uploadId), 422).message).toContain('image/jpeg');
    expect(await s3.has(`uploads/${acme.id}/${upload.uploadId}`)).toBe(false);
    const media = await server.ctx.db.selectFrom('media').select('id').where('organization_id', '=', acme.id).execute();
    expect(media.map((row) => row.id)).toEqual([]);
  });

  it('refuses stored bytes whose size differs from the declared one', async () => {
    // A storage that does not enforce the signed length (or an object written by other means).
    const upload = await startUpload(server, acme, 'odd.png', 'image/png', 500);
    const bytes = png();
    const { Readable } = await import('node:stream');
    await server.ctx.storage.put(`uploads/${acme.id}/${upload.uploadId}`, Readable.from([bytes]), {
      contentType: 'image/png',
      size: bytes.length,
    });
    expect(refusalOf(await complete(upload.uploadId), 422).message).toBe(
      `The upload has ${bytes.length} bytes but 500 were declared; start a new upload.`,
    );
    expect(await s3.has(`uploads/${acme.id}/${upload.uploadId}`)).toBe(false);
  });

  it('stores a file downloaded from a URL in the bucket', async () => {
    const bytes = png();
    const remote = http.createServer((_req, res) => res.end(bytes));
    await new Promise<void>((resolve) => remote.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = remote.address() as AddressInfo;
      const answer = await publicApi(server, acme.auth).POST('/public/v1/media/upload-from-url', {
        body: { url: `http://127.0.0.1:${port}/brand/logo.png` },
      });
      const media = dataOf(answer, 201);
      expect(media).toMatchObject({ fileName: 'logo.png', contentType: 'image/png', size: bytes.length });
      expect(await s3.has(`media/${acme.id}/${media.id}`)).toBe(true);
      const download = await fetch(media.url);
      expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);
    } finally {
      await new Promise((resolve) => remote.close(resolve));
    }
  });
});
