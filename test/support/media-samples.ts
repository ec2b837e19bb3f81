import { Readable } from 'node:stream';
import { deflateSync } from 'node:zlib';
import { PDFDocument } from 'pdf-lib';

/** Small files whose first bytes are those of real files of each type (what the server sniffs). */

function crc32(bytes: Buffer): number {
  let crc = ~0;
  for (const byte of bytes) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return ~crc >>> 0;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** A valid PNG of one colour (RGBA), 1×1 transparent unless told otherwise. */
export function png(width = 1, height = width, rgba: [number, number, number, number] = [0, 0, 0, 0]): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 6, 0, 0, 0], 8);
  // Each row: filter type 0, then the pixels.
  const row = Buffer.concat([Buffer.from([0]), ...Array.from({ length: width }, () => Buffer.from(rgba))]);
  return Buffer.concat([
    Buffer.from('89504e470d0a1a0a', 'hex'),
    pngChunk('IHDR', header),
    pngChunk('IDAT', deflateSync(Buffer.concat(Array.from({ length: height }, () => row)))),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A valid 1×1 transparent GIF. */
export function gif(): Buffer {
  return Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
}

/**
 * The start of a JFIF JPEG, padded to `size` bytes; with `pixels`, its start of frame (SOF0) states that
 * width and height after `metadata` bytes of an APP1 segment, as a camera's EXIF would put them.
 */
export function jpeg(size = 2048, pixels?: { width: number; height: number; metadata?: number }): Buffer {
  const parts = [Buffer.from('ffd8ffe000104a46494600010100000100010000', 'hex')];
  if (pixels) {
    let metadata = pixels.metadata ?? 0;
    while (metadata > 0) {
      const length = Math.min(metadata, 65_533);
      const app1 = Buffer.alloc(4 + length);
      app1.writeUInt16BE(0xffe1, 0);
      app1.writeUInt16BE(2 + length, 2);
      parts.push(app1);
      metadata -= length;
    }
    const frame = Buffer.alloc(19);
    frame.writeUInt16BE(0xffc0, 0);
    frame.writeUInt16BE(17, 2);
    frame.writeUInt8(8, 4);
    frame.writeUInt16BE(pixels.height, 5);
    frame.writeUInt16BE(pixels.width, 7);
    frame.writeUInt8(3, 9);
    parts.push(frame);
  }
  const start = Buffer.concat(parts);
  return Buffer.concat([start, Buffer.alloc(Math.max(0, size - start.length))]);
}

/** The RIFF header of a lossy WebP, padded to `size` bytes. */
export function webp(size = 64): Buffer {
  const head = Buffer.alloc(16);
  head.write('RIFF', 0, 'latin1');
  head.writeUInt32LE(size - 8, 4);
  head.write('WEBPVP8 ', 8, 'latin1');
  return Buffer.concat([head, Buffer.alloc(Math.max(0, size - head.length))]);
}

/** An ISO-BMFF `ftyp` box of the given brand (`isom` → MP4, `qt  ` → QuickTime), padded to `size` bytes. */
export function isoMedia(brand: 'isom' | 'qt  ', size = 4096): Buffer {
  const ftyp = Buffer.alloc(24);
  ftyp.writeUInt32BE(24, 0);
  ftyp.write('ftyp', 4, 'latin1');
  ftyp.write(brand, 8, 'latin1');
  ftyp.write(brand, 16, 'latin1');
  ftyp.write(brand === 'isom' ? 'mp41' : 'qt  ', 20, 'latin1');
  return Buffer.concat([ftyp, Buffer.alloc(Math.max(0, size - ftyp.length))]);
}

export const mp4 = (size?: number) => isoMedia('isom', size);

/** A PDF by its first bytes whose pages cannot be read: its catalog has no page tree. */
export function pdf(): Buffer {
  return Buffer.from('%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');
}

/** A real PDF of `pages` pages (written by pdf-lib), optionally padded to at least `size` bytes by a comment. */
export async function pdfDocument(
  pages: number,
  options: { size?: number; objectStreams?: boolean } = {},
): Promise<Buffer> {
  const document = await PDFDocument.create();
  for (let page = 0; page < pages; page++) document.addPage([595, 842]);
  const bytes = Buffer.from(await document.save({ useObjectStreams: options.objectStreams ?? false }));
  const missing = (options.size ?? 0) - bytes.length;
  // A comment line after the header: the file stays a PDF whose cross-reference offsets are shifted, which
  // readers repair; pdf-lib reads objects by scanning, so the pages are still found.
  if (missing <= 0) return bytes;
  const head = bytes.indexOf('\n') + 1;
  return Buffer.concat([bytes.subarray(0, head), Buffer.from(`%${'x'.repeat(missing - 2)}\n`), bytes.subarray(head)]);
}

/** A ZIP archive holding one text file: a file type that is not media. */
export function zip(): Buffer {
  const name = Buffer.from('notes.txt', 'latin1');
  const data = Buffer.from('not media\n', 'latin1');
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt32LE(crc32(data), 14);
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(data.length, 22);
  local.writeUInt16LE(name.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(20, 4);
  central.writeUInt16LE(20, 6);
  central.writeUInt32LE(crc32(data), 16);
  central.writeUInt32LE(data.length, 20);
  central.writeUInt32LE(data.length, 24);
  central.writeUInt16LE(name.length, 28);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(central.length + name.length, 12);
  end.writeUInt32LE(local.length + name.length + data.length, 16);
  return Buffer.concat([local, name, data, central, name, end]);
}

/**
 * An MP4 of `size` bytes produced chunk by chunk, never held whole in memory (for large uploads).
 */
export function mp4Stream(size: number, chunkSize = 1024 * 1024): Readable {
  const head = mp4(64);
  const zeros = Buffer.alloc(chunkSize);
  let sent = 0;
  return new Readable({
    read() {
      if (sent >= size) return this.push(null);
      const chunk =
        sent === 0
          ? Buffer.concat([head, zeros]).subarray(0, Math.min(size, chunkSize))
          : zeros.subarray(0, Math.min(chunkSize, size - sent));
      sent += chunk.length;
      this.push(chunk);
    },
  });
}

/** An ISO-BMFF box: 32-bit size, type, body. */
function box(type: string, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const head = Buffer.alloc(8);
  head.writeUInt32BE(8 + body.length, 0);
  head.write(type, 4, 'latin1');
  return Buffer.concat([head, body]);
}

/**
 * An MP4 whose movie header (`moov/mvhd`, version 0 or 1) says it lasts `seconds`, with `mdatBytes`
 * of media data before the index (as a camera writes it) or after it (as a "fast start" file has it).
 */
export function mp4WithDuration(
  seconds: number,
  options: { mdatBytes?: number; indexFirst?: boolean; version?: 0 | 1 } = {},
): Buffer {
  const timescale = 90_000;
  const version = options.version ?? 0;
  const mvhd = Buffer.alloc(version === 1 ? 112 : 100);
  mvhd[0] = version;
  if (version === 1) {
    mvhd.writeUInt32BE(timescale, 20);
    mvhd.writeBigUInt64BE(BigInt(Math.round(seconds * timescale)), 24);
  } else {
    mvhd.writeUInt32BE(timescale, 12);
    mvhd.writeUInt32BE(Math.round(seconds * timescale), 16);
  }
  const moov = box('moov', box('mvhd', mvhd), box('trak', Buffer.alloc(32)));
  const mdat = box('mdat', Buffer.alloc(options.mdatBytes ?? 1024));
  const ftyp = isoMedia('isom', 24);
  return Buffer.concat(options.indexFirst ? [ftyp, moov, mdat] : [ftyp, mdat, moov]);
}

/** An EBML element: its id's bytes, a size of 8 bytes, the body. */
function ebml(id: number[], body: Buffer, unknownSize = false): Buffer {
  // An 8-byte size starts with 0x01; all its value bits set means "unknown" (a live recording's segment).
  const size = Buffer.alloc(8, 0xff);
  size[0] = 0x01;
  if (!unknownSize) size.writeBigUInt64BE(BigInt(body.length) | (1n << 56n));
  return Buffer.concat([Buffer.from(id), size, body]);
}

/** A WebM whose `Segment/Info` says it lasts `seconds` (or, like a live recording, nothing). */
export function webmWithDuration(seconds: number | null): Buffer {
  const header = ebml([0x1a, 0x45, 0xdf, 0xa3], ebml([0x42, 0x82], Buffer.from('webm')));
  const scale = ebml([0x2a, 0xd7, 0xb1], Buffer.from([0x0f, 0x42, 0x40]));
  const duration = Buffer.alloc(8);
  duration.writeDoubleBE((seconds ?? 0) * 1000);
  const info = ebml(
    [0x15, 0x49, 0xa9, 0x66],
    Buffer.concat([scale, ...(seconds === null ? [] : [ebml([0x44, 0x89], duration)])]),
  );
  const seekHead = ebml([0x11, 0x4d, 0x9b, 0x74], Buffer.alloc(16));
  const cluster = ebml([0x1f, 0x43, 0xb6, 0x75], Buffer.alloc(2048));
  return Buffer.concat([header, ebml([0x18, 0x53, 0x80, 0x67], Buffer.concat([seekHead, info, cluster]), true)]);
}
