import { imageSize } from 'image-size';
import type { RangeReader } from './video-duration.js';

/** An image's size in pixels, as its file's header states it. */
export interface ImageDimensions {
  width: number;
  height: number;
}

/** The formats whose dimensions are read: the image types the service accepts. */
const FORMATS = new Set(['png', 'gif', 'jpg', 'webp']);

/**
 * The width and height an image is shown at, as its file's header states them (read by image-size:
 * PNG's IHDR, GIF's logical screen, JPEG's start of frame, WebP's VP8, VP8L or VP8X header);
 * `undefined` for another format or a header that says none. A JPEG whose EXIF orientation turns it a
 * quarter (a phone's portrait photo, stored landscape) is as wide as its stored pixels are high, as
 * every network and browser shows it.
 */
export function imageDimensions(bytes: Buffer): ImageDimensions | undefined {
  let found: ReturnType<typeof imageSize>;
  try {
    found = imageSize(bytes);
  } catch {
    // No image it knows, or a header cut short.
    return undefined;
  }
  if (!FORMATS.has(found.type ?? '') || !(found.width > 0) || !(found.height > 0)) return undefined;
  const quarterTurn = found.orientation !== undefined && found.orientation >= 5 && found.orientation <= 8;
  return quarterTurn ? { width: found.height, height: found.width } : { width: found.width, height: found.height };
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
