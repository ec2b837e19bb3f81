import type { RangeReader } from './video-duration.js';

/** An image's size in pixels, as its file's header states it. */
export interface ImageDimensions {
  width: number;
  height: number;
}

/**
 * The width and height an image file states (PNG's IHDR, GIF's logical screen, JPEG's start of frame,
 * WebP's VP8, VP8L or VP8X header); `undefined` for another format or a header that says none. A JPEG's
 * EXIF orientation is not applied: these are the stored pixels' dimensions.
 */
export function imageDimensions(bytes: Buffer): ImageDimensions | undefined {
  const found = png(bytes) ?? gif(bytes) ?? jpeg(bytes) ?? webp(bytes);
  return found && found.width > 0 && found.height > 0 ? found : undefined;
}

/**
 * How far into an image its dimensions are looked for: a JPEG's frame header comes after its metadata
 * segments (EXIF with a thumbnail, an ICC profile), which rarely reach beyond a few hundred kilobytes.
 */
const HEAD_BYTES = 1024 * 1024;

/** The dimensions a stored image's header states, read from its first bytes; `undefined` as above. */
export async function readImageDimensions(read: RangeReader): Promise<ImageDimensions | undefined> {
  return imageDimensions(await read(0, HEAD_BYTES));
}

function png(bytes: Buffer): ImageDimensions | undefined {
  // The signature, then the IHDR chunk: its length, type, width and height (big-endian).
  if (bytes.length < 24 || bytes.readUInt32BE(0) !== 0x89504e47 || bytes.toString('latin1', 12, 16) !== 'IHDR')
    return undefined;
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

function gif(bytes: Buffer): ImageDimensions | undefined {
  if (bytes.length < 10 || !/^GIF8[79]a$/.test(bytes.toString('latin1', 0, 6))) return undefined;
  return { width: bytes.readUInt16LE(6), height: bytes.readUInt16LE(8) };
}

function jpeg(bytes: Buffer): ImageDimensions | undefined {
  if (bytes.length < 4 || bytes[0] !== 0xff || bytes[1] !== 0xd8) return undefined;
  // Segments follow one another, each a marker and its length, until a start of frame (SOF0 to SOF15,
  // but for DHT C4, JPG C8 and DAC CC) names the frame's height and width.
  let at = 2;
  while (at + 9 < bytes.length) {
    if (bytes[at] !== 0xff) return undefined;
    const marker = bytes[at + 1]!;
    if (marker === 0xff) {
      at += 1;
      continue;
    }
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc)
      return { height: bytes.readUInt16BE(at + 5), width: bytes.readUInt16BE(at + 7) };
    // Markers without a length: the start of image, restarts, the end.
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      at += 2;
      continue;
    }
    at += 2 + bytes.readUInt16BE(at + 2);
  }
  return undefined;
}

function webp(bytes: Buffer): ImageDimensions | undefined {
  if (bytes.length < 30 || bytes.toString('latin1', 0, 4) !== 'RIFF' || bytes.toString('latin1', 8, 12) !== 'WEBP')
    return undefined;
  const chunk = bytes.toString('latin1', 12, 16);
  // Lossy: the key frame's 14-bit dimensions after its start code.
  if (chunk === 'VP8 ') return { width: bytes.readUInt16LE(26) & 0x3fff, height: bytes.readUInt16LE(28) & 0x3fff };
  // Lossless: a signature byte, then 14 bits of width - 1 and 14 of height - 1.
  if (chunk === 'VP8L') {
    const bits = bytes.readUInt32LE(21);
    return { width: (bits & 0x3fff) + 1, height: ((bits >> 14) & 0x3fff) + 1 };
  }
  // Extended: 24-bit canvas width - 1 and height - 1.
  if (chunk === 'VP8X') return { width: bytes.readUIntLE(24, 3) + 1, height: bytes.readUIntLE(27, 3) + 1 };
  return undefined;
}
