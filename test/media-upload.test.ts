import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keepHouse } from '../src/housekeeping.js';
import { errorOf, publicApi, type Schemas } from './support/api.js';
import { eventually } from './support/eventually.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { jpeg, mp4, mp4WithDuration, pdf, pdfDocument, png, zip } from './support/media-samples.js';
import { startTestServer, type TestServer } from './support/server.js';
import { dataOf, refusalOf } from './support/typed-answers.js';
import { startUpload, type UploadAnswer } from './support/uploads.js';

let server: TestServer;
let acme: TestOrganization;
let globex: TestOrganization;

beforeAll(async () => {
  server = await startTestServer({ env: { MEDIA_MAX_IMAGE_BYTES: '100000', MEDIA_MAX_DOCUMENT_BYTES: '300000' } });
  acme = await createOrganization(server.ctx.db, 'Acme');
  globex = await createOrganization(server.ctx.db, 'Globex');
});
afterAll(() => server?.close());

const createUpload = (org: TestOrganization, body: Schemas['CreateUploadRequest']) =>
  publicApi(server, org.auth).POST('/public/v1/media/uploads', { body });

/** Step 3 of the signed upload. */
const complete = (org: TestOrganization, uploadId: string) =>
  publicApi(server, org.auth).POST('/public/v1/media/uploads/{uploadId}/complete', { params: { path: { uploadId } } });

function put(
  upload: UploadAnswer,
  bytes: Buffer,
  headers: Record<string, string> = upload.headers,
  url = upload.uploadUrl,
) {
  return fetch(url, { method: 'PUT', headers, body: bytes });
}

const mediaDir = () => path.join(server.ctx.config.dataDir, 'media');
/** Every file under the media directory, relative to it (temporary files included). */
function storedFiles(): string[] {
  if (!fs.existsSync(mediaDir())) return [];
  return (fs.readdirSync(mediaDir(), { recursive: true }) as string[])
    .filter((entry) => fs.statSync(path.join(mediaDir(), entry)).isFile())
    .sort();
}

describe('signed upload on local disk', () => {
  it('takes a PNG through create, PUT and complete, and serves it from a signed URL', async () => {
    const bytes = png();
    const upload = await startUpload(server, acme, 'logo.png', 'image/png', bytes.length);
    expect(upload.uploadId).toMatch(/^upl_/);
    expect(upload.method).toBe('PUT');
    expect(upload.headers).toEqual({ 'Content-Type': 'image/png', 'Content-Length': String(bytes.length) });
    expect(upload.uploadUrl.startsWith(`${server.baseUrl}/media-files/uploads/${acme.id}/${upload.uploadId}?`)).toBe(
      true,
    );
    expect(new Date(upload.expiresAt).getTime()).toBeGreaterThan(Date.now() + 59 * 60_000);

    const putResponse = await put(upload, bytes);
    expect(putResponse.status).toBe(200);

    const media = dataOf(await complete(acme, upload.uploadId));
    expect(media).toMatchObject({ fileName: 'logo.png', contentType: 'image/png', kind: 'image', size: bytes.length });
    expect(media.id).toMatch(/^med_/);

    const download = await fetch(media.url);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('image/png');
    expect(download.headers.get('x-content-type-options')).toBe('nosniff');
    expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);

    expect(dataOf(await complete(acme, upload.uploadId)).id).toBe(media.id);

    // The checked bytes moved to the media's key: nothing is left under the upload.
    expect(storedFiles()).toContain(`media/${acme.id}/${media.id}`);
    expect(storedFiles()).not.toContain(`uploads/${acme.id}/${upload.uploadId}`);
  });

  it('accepts the content type in any case and stores the canonical one', async () => {
    const bytes = mp4(5000);
    const upload = await startUpload(server, acme, 'clip.MP4', 'Video/MP4', bytes.length);
    expect(upload.headers['Content-Type']).toBe('video/mp4');
    expect((await put(upload, bytes)).status).toBe(200);
    const media = dataOf(await complete(acme, upload.uploadId));
    expect(media).toMatchObject({ contentType: 'video/mp4', kind: 'video', size: 5000, durationSec: null });
  });

  it('reads a video’s length from its container when completing it', async () => {
    const bytes = mp4WithDuration(12.345, { mdatBytes: 100_000 });
    const upload = await startUpload(server, acme, 'clip.mp4', 'video/mp4', bytes.length);
    expect((await put(upload, bytes)).status).toBe(200);
    const media = dataOf(await complete(acme, upload.uploadId));
    expect(media).toMatchObject({ kind: 'video', durationSec: 12.345 });
    const image = await startUpload(server, acme, 'photo.png', 'image/png', png().length);
    expect((await put(image, png())).status).toBe(200);
    expect(dataOf(await complete(acme, image.uploadId))).toMatchObject({
      kind: 'image',
      durationSec: null,
    });
  });

  it('takes a PDF as a document and counts its pages, those kept in object streams too', async () => {
    for (const objectStreams of [false, true]) {
      const bytes = await pdfDocument(7, { objectStreams });
      const upload = await startUpload(server, acme, 'Quarterly results.pdf', 'application/pdf', bytes.length);
      expect((await put(upload, bytes)).status).toBe(200);
      const media = dataOf(await complete(acme, upload.uploadId));
      expect(media).toMatchObject({
        fileName: 'Quarterly results.pdf',
        contentType: 'application/pdf',
        kind: 'document',
        size: bytes.length,
        durationSec: null,
        pageCount: 7,
      });
      const listed = dataOf(await publicApi(server, acme.auth).GET('/public/v1/media', { params: { query: {} } }));
      expect(listed.data.find((one) => one.id === media.id)).toMatchObject({ kind: 'document', pageCount: 7 });
    }
    const image = await startUpload(server, acme, 'photo.png', 'image/png', png().length);
    expect((await put(image, png())).status).toBe(200);
    expect(dataOf(await complete(acme, image.uploadId))).toMatchObject({ kind: 'image', pageCount: null });
  });

  it('refuses a PDF whose pages cannot be read, and keeps nothing of it', async () => {
    const bytes = pdf();
    const upload = await startUpload(server, acme, 'broken.pdf', 'application/pdf', bytes.length);
    expect((await put(upload, bytes)).status).toBe(200);
    const before = await countMedia(acme);
    const error = refusalOf(await complete(acme, upload.uploadId), 422, 'unprocessable');
    expect(error.message).toContain('The PDF cannot be read: its pages could not be counted');
    expect(await countMedia(acme)).toBe(before);
    expect(storedFiles()).not.toContain(`uploads/${acme.id}/${upload.uploadId}`);
  });

  it('answers 409 while the bytes have not arrived, and completes once they have', async () => {
    const bytes = png();
    const upload = await startUpload(server, acme, 'late.png', 'image/png', bytes.length);
    refusalOf(await complete(acme, upload.uploadId), 409, 'conflict');
    await put(upload, bytes);
    dataOf(await complete(acme, upload.uploadId));
  });

  it('keeps the bytes of an upload whose media could not be recorded, so completing again succeeds', async () => {
    const bytes = png();
    const upload = await startUpload(server, acme, 'doomed.png', 'image/png', bytes.length);
    await put(upload, bytes);
    // The database itself refuses the media row, after the bytes were moved to the media's key.
    await sql`create function refuse_doomed_media() returns trigger language plpgsql as $$
      begin
        if new.file_name = 'doomed.png' then raise exception 'refused by the test'; end if;
        return new;
      end $$`.execute(server.ctx.db);
    await sql`create trigger refuse_doomed_media before insert on media for each row execute function refuse_doomed_media()`.execute(
      server.ctx.db,
    );
    try {
      const filesBefore = storedFiles();
      refusalOf(await complete(acme, upload.uploadId), 500);
      expect(storedFiles()).toEqual(filesBefore);

      await sql`drop trigger refuse_doomed_media on media`.execute(server.ctx.db);
      const media = dataOf(await complete(acme, upload.uploadId));
      expect(Buffer.from(await (await fetch(media.url)).arrayBuffer())).toEqual(bytes);
    } finally {
      await sql`drop trigger if exists refuse_doomed_media on media`.execute(server.ctx.db);
      await sql`drop function if exists refuse_doomed_media()`.execute(server.ctx.db);
    }
  });

  it('refuses bytes of another type than declared, deletes them and creates no media', async () => {
    const bytes = jpeg(3000);
    const upload = await startUpload(server, acme, 'photo.png', 'image/png', bytes.length);
    expect((await put(upload, bytes)).status).toBe(200);
    const before = await countMedia(acme);

    const error = refusalOf(await complete(acme, upload.uploadId), 422, 'unprocessable');
    expect(error.message).toContain('image/jpeg');
    expect(error.message).toContain('image/png');
    expect(await countMedia(acme)).toBe(before);
    expect(storedFiles()).not.toContain(`uploads/${acme.id}/${upload.uploadId}`);

    // The refusal stands: completing again says the same.
    expect(refusalOf(await complete(acme, upload.uploadId), 422).message).toBe(error.message);
  });

  it('refuses bytes that are no media at all', async () => {
    const bytes = zip();
    const upload = await startUpload(server, acme, 'doc.png', 'image/png', bytes.length);
    await put(upload, bytes);
    expect(refusalOf(await complete(acme, upload.uploadId), 422).message).toContain('application/zip');
  });

  it('refuses a PUT of another size than declared and keeps nothing of it', async () => {
    const bytes = png();
    const upload = await startUpload(server, acme, 'short.png', 'image/png', bytes.length + 10);

    const shorter = await put(upload, bytes, { 'Content-Type': 'image/png' });
    expect(shorter.status).toBe(400);
    expect((await errorOf(shorter)).message).toBe(
      `The upload was declared with ${bytes.length + 10} bytes; ${bytes.length} were sent.`,
    );

    const longer = await put(upload, Buffer.concat([bytes, Buffer.alloc(20)]), { 'Content-Type': 'image/png' });
    expect(longer.status).toBe(413);
    expect((await errorOf(longer)).code).toBe('payload_too_large');

    expect(storedFiles().filter((file) => file.includes(upload.uploadId) || file.startsWith('.partial/'))).toEqual([]);
    refusalOf(await complete(acme, upload.uploadId), 409);
  });

  it('cuts off a streamed body that grows past the declared size', async () => {
    const upload = await startUpload(server, acme, 'stream.png', 'image/png', 100);
    const chunks = [png(), Buffer.alloc(1000)];
    const body = new ReadableStream({
      pull(controller) {
        const next = chunks.shift();
        if (next) controller.enqueue(next);
        else controller.close();
      },
    });
    // Without a Content-Length the server only learns the size by counting.
    const response = await fetch(upload.uploadUrl, {
      method: 'PUT',
      headers: { 'Content-Type': 'image/png' },
      body,
      duplex: 'half',
    }).catch((error: Error) => error);
    expect(response).toBeInstanceOf(Response);
    expect((response as Response).status).toBe(413);
    expect(storedFiles().filter((file) => file.includes(upload.uploadId) || file.startsWith('.partial/'))).toEqual([]);
    refusalOf(await complete(acme, upload.uploadId), 409);
  });

  it('keeps nothing of a PUT whose client goes away halfway', async () => {
    const bytes = mp4(400_000);
    const upload = await startUpload(server, acme, 'cut.mp4', 'video/mp4', bytes.length);
    const request = http.request(upload.uploadUrl, { method: 'PUT', headers: upload.headers });
    request.on('error', () => {});
    request.write(bytes.subarray(0, 100_000));
    const partial = path.join(mediaDir(), '.partial');
    await eventually(() => expect(fs.existsSync(partial) && fs.readdirSync(partial).length).toBeGreaterThan(0));
    request.destroy();
    await eventually(() => expect(fs.readdirSync(partial)).toEqual([]));
    expect(storedFiles().filter((file) => file.includes(upload.uploadId))).toEqual([]);
    refusalOf(await complete(acme, upload.uploadId), 409);
  });

  it('answers 409 while another request is completing the upload, and takes over an abandoned claim', async () => {
    const bytes = png();
    const upload = await startUpload(server, acme, 'busy.png', 'image/png', bytes.length);
    await put(upload, bytes);
    const claim = (until: Date) =>
      server.ctx.db.updateTable('uploads').set({ completing_until: until }).where('id', '=', upload.uploadId).execute();

    await claim(new Date(Date.now() + 60_000));
    expect(refusalOf(await complete(acme, upload.uploadId), 409).message).toBe(
      'Another request is completing this upload right now; retry in a moment.',
    );

    await claim(new Date(Date.now() - 1000)); // its request died: the lease ran out
    dataOf(await complete(acme, upload.uploadId));
  });

  it('refuses a PUT with another Content-Type than signed', async () => {
    const bytes = png();
    const upload = await startUpload(server, acme, 'typed.png', 'image/png', bytes.length);
    const response = await put(upload, bytes, { 'Content-Type': 'image/jpeg' });
    expect(response.status).toBe(400);
    expect((await errorOf(response)).message).toContain('Content-Type: image/png');
  });

  it('refuses a PUT to an altered URL', async () => {
    const bytes = png();
    const upload = await startUpload(server, acme, 'tampered.png', 'image/png', bytes.length);
    const url = new URL(upload.uploadUrl);

    const bigger = new URL(url);
    bigger.searchParams.set('size', String(bytes.length * 100));
    const otherKey = new URL(url);
    otherKey.pathname = otherKey.pathname.replace(acme.id, globex.id);
    const badSignature = new URL(url);
    badSignature.searchParams.set('signature', `${url.searchParams.get('signature')!.slice(0, -2)}AA`);
    const longer = new URL(url);
    longer.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 3600));
    const unsigned = new URL(url);
    unsigned.searchParams.delete('signature');

    for (const altered of [bigger, otherKey, badSignature, longer, unsigned]) {
      const response = await put(upload, bytes, upload.headers, altered.href);
      expect(response.status, altered.href).toBe(403);
      const error = await errorOf(response);
      expect(error.code).toBe('forbidden');
      expect(error.message).toContain('not validly signed');
      expect(error.requestId).toMatch(/^req_/);
    }
    refusalOf(await complete(acme, upload.uploadId), 409);
  });

  it('refuses a PUT after the URL expired, and completing long after expiry', async () => {
    const bytes = png();
    const start = new Date('2026-11-21T10:00:00.000Z');
    server.setNow(start);
    try {
      const upload = await startUpload(server, acme, 'expired.png', 'image/png', bytes.length);
      expect(upload.expiresAt).toBe('2026-11-21T11:00:00.000Z');

      server.setNow('2026-11-21T11:00:00.000Z');
      const late = await put(upload, bytes);
      expect(late.status).toBe(403);
      expect((await errorOf(late)).message).toBe('This signed URL expired at 2026-11-21T11:00:00.000Z.');

      // A PUT that started in time may finish after expiresAt; completing is allowed an hour more.
      server.setNow('2026-11-21T10:59:59.000Z');
      expect((await put(upload, bytes)).status).toBe(200);
      server.setNow('2026-11-21T12:00:00.001Z');
      expect(refusalOf(await complete(acme, upload.uploadId), 422).message).toContain(
        'expired at 2026-11-21T11:00:00.000Z',
      );
      expect(storedFiles()).not.toContain(`uploads/${acme.id}/${upload.uploadId}`);
    } finally {
      server.setNow(undefined);
    }
  });

  it('completes within the hour after expiry when the bytes arrived in time', async () => {
    const bytes = png();
    server.setNow('2026-11-21T10:00:00.000Z');
    try {
      const upload = await startUpload(server, acme, 'grace.png', 'image/png', bytes.length);
      await put(upload, bytes);
      server.setNow('2026-11-21T11:30:00.000Z');
      dataOf(await complete(acme, upload.uploadId));
    } finally {
      server.setNow(undefined);
    }
  });

  it('answers 404 for another organization’s upload and for an unknown one', async () => {
    const bytes = png();
    const upload = await startUpload(server, acme, 'private.png', 'image/png', bytes.length);
    await put(upload, bytes);
    for (const [org, id] of [
      [globex, upload.uploadId],
      [acme, 'upl_doesnotexist0000000'],
    ] as const) {
      refusalOf(await complete(org, id), 404, 'not_found');
    }
    // The owner still completes it.
    dataOf(await complete(acme, upload.uploadId));
  });

  it('refuses to start an upload over the size limit (413) or of a type not accepted (415)', async () => {
    const tooBig = await createUpload(acme, { fileName: 'huge.png', contentType: 'image/png', size: 100_001 });
    expect(refusalOf(tooBig, 413)).toMatchObject({
      code: 'payload_too_large',
      message: 'Images may be at most 100000 bytes; this one has 100001.',
    });

    const video = await createUpload(acme, { fileName: 'big.mp4', contentType: 'video/mp4', size: 500_000_000 });
    dataOf(video, 201);
    const document = await createUpload(acme, { fileName: 'deck.pdf', contentType: 'application/pdf', size: 300_001 });
    expect(refusalOf(document, 413).message).toBe('Documents may be at most 300000 bytes; this one has 300001.');

    const unsupported = await createUpload(acme, { fileName: 'notes.zip', contentType: 'application/zip', size: 1000 });
    const error = refusalOf(unsupported, 415, 'unsupported_media_type');
    expect(error.message).toBe(
      'The content type application/zip is not accepted; allowed: image/jpeg, image/png, image/gif, image/webp, video/mp4, video/quicktime, video/webm, application/pdf.',
    );

    const malformed = await createUpload(acme, { fileName: 'x', contentType: 'png', size: 10 });
    refusalOf(malformed, 400);
    const zero = await createUpload(acme, { fileName: 'x.png', contentType: 'image/png', size: 0 });
    refusalOf(zero, 400);
  });

  it('serves a file only through an unexpired, unaltered signed URL', async () => {
    const bytes = png();
    const upload = await startUpload(server, acme, 'served.png', 'image/png', bytes.length);
    await put(upload, bytes);
    const media = dataOf(await complete(acme, upload.uploadId));
    const url = new URL(media.url);
    expect(new Date(media.urlExpiresAt).getTime()).toBe(Number(url.searchParams.get('expires')) * 1000);

    const retyped = new URL(url);
    retyped.searchParams.set('type', 'text/html');
    const response = await fetch(retyped);
    expect(response.status).toBe(403);
    expect((await errorOf(response)).code).toBe('forbidden');

    server.setNow(new Date(new Date(media.urlExpiresAt).getTime() + 1000));
    try {
      expect((await fetch(url)).status).toBe(403);
    } finally {
      server.setNow(undefined);
    }

    const range = await fetch(url, { headers: { Range: 'bytes=0-7' } });
    expect(range.status).toBe(206);
    expect(Buffer.from(await range.arrayBuffer()).equals(bytes.subarray(0, 8))).toBe(true);
  });

  it('housekeeping forgets an upload a day after it expired, with bytes that were never completed', async () => {
    const bytes = png();
    server.setNow('2026-12-01T10:00:00.000Z');
    try {
      const upload = await startUpload(server, acme, 'abandoned.png', 'image/png', bytes.length);
      await put(upload, bytes);
      expect(storedFiles()).toContain(`uploads/${acme.id}/${upload.uploadId}`);

      // The housekeeping job of the workers, as its schedule runs it every ten minutes.
      server.setNow('2026-12-02T10:59:00.000Z'); // less than a day after expiresAt (11:00)
      await keepHouse(server.ctx);
      expect(storedFiles()).toContain(`uploads/${acme.id}/${upload.uploadId}`);

      server.setNow('2026-12-02T11:01:00.000Z');
      await keepHouse(server.ctx);
      expect(storedFiles()).not.toContain(`uploads/${acme.id}/${upload.uploadId}`);
      refusalOf(await complete(acme, upload.uploadId), 404);
    } finally {
      server.setNow(undefined);
    }
  });

  it('answers a completed upload again for a day after it expired, then 404, even when no sweep ran', async () => {
    const bytes = png();
    server.setNow('2026-12-05T10:00:00.000Z');
    try {
      const upload = await startUpload(server, acme, 'done.png', 'image/png', bytes.length);
      await put(upload, bytes);
      const media = dataOf(await complete(acme, upload.uploadId));
      server.setNow('2026-12-06T10:59:00.000Z'); // less than a day after expiresAt (11:00)
      expect(dataOf(await complete(acme, upload.uploadId)).id).toBe(media.id);
      server.setNow('2026-12-06T11:01:00.000Z');
      refusalOf(await complete(acme, upload.uploadId), 404);
    } finally {
      server.setNow(undefined);
    }
  });
});

async function countMedia(org: TestOrganization): Promise<number> {
  const rows = await server.ctx.db.selectFrom('media').select('id').where('organization_id', '=', org.id).execute();
  return rows.length;
}
