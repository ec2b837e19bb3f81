import { Readable } from 'node:stream';
import { deflateSync } from 'node:zlib';

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

/** The start of a JFIF JPEG, padded to `size` bytes. */
export function jpeg(size = 2048): Buffer {
  const start = Buffer.from('ffd8ffe000104a46494600010100000100010000', 'hex');
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

/** A PDF, which is not media. */
export function pdf(): Buffer {
  return Buffer.from('%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');
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
      const chunk = sent === 0 ? Buffer.concat([head, zeros]).subarray(0, Math.min(size, chunkSize)) : zeros.subarray(0, Math.min(chunkSize, size - sent));
      sent += chunk.length;
      this.push(chunk);
    },
  });
}
