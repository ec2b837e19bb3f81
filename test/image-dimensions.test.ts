import { describe, expect, it } from 'vitest';
import { imageDimensions } from '../src/media/image-dimensions.js';
import { gif, jpeg, png, webp } from './support/media-samples.js';

/** A JPEG's start: JFIF's APP0 segment, then a baseline or progressive frame of `width` × `height`. */
function jpegOf(width: number, height: number, frame = 0xc0): Buffer {
  const app0 = Buffer.from('ffe000104a46494600010100000100010000', 'hex');
  const sof = Buffer.from([0xff, frame, 0x00, 0x11, 0x08, height >> 8, height & 0xff, width >> 8, width & 0xff]);
  return Buffer.concat([Buffer.from([0xff, 0xd8]), app0, sof, Buffer.alloc(16)]);
}

/** A JPEG's start with an EXIF segment (APP1, big-endian TIFF) whose one entry is the `orientation`. */
function exifJpegOf(width: number, height: number, orientation: number): Buffer {
  const tiff = Buffer.from(`4d4d002a0000000800010112000300000001000${orientation}000000000000`, 'hex');
  const exif = Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), tiff]);
  const app1 = Buffer.concat([Buffer.from([0xff, 0xe1, 0x00, exif.length + 2]), exif]);
  const sof = Buffer.from([0xff, 0xc0, 0x00, 0x11, 0x08, height >> 8, height & 0xff, width >> 8, width & 0xff]);
  return Buffer.concat([Buffer.from([0xff, 0xd8]), app1, sof, Buffer.alloc(16)]);
}

/** A WebP's start with its `chunk` (`VP8 `, `VP8L`, `VP8X`) holding `data` from its payload's first byte. */
function webpOf(chunk: string, data: Buffer): Buffer {
  const head = Buffer.alloc(20);
  head.write('RIFF', 0, 'latin1');
  head.writeUInt32LE(12 + data.length, 4);
  head.write(`WEBP${chunk}`, 8, 'latin1');
  head.writeUInt32LE(data.length, 16);
  return Buffer.concat([head, data, Buffer.alloc(16)]);
}

describe('the dimensions an image file states', () => {
  it('reads PNG, GIF, JPEG (baseline and progressive) and the three kinds of WebP', () => {
    expect(imageDimensions(png(7, 3))).toEqual({ width: 7, height: 3 });
    expect(imageDimensions(gif())).toEqual({ width: 1, height: 1 });
    expect(imageDimensions(jpegOf(1600, 900))).toEqual({ width: 1600, height: 900 });
    expect(imageDimensions(jpegOf(300, 4000, 0xc2))).toEqual({ width: 300, height: 4000 });

    const lossy = Buffer.from([0x10, 0x02, 0x00, 0x9d, 0x01, 0x2a, 0x80, 0x02, 0xe0, 0x01]);
    expect(imageDimensions(webpOf('VP8 ', lossy))).toEqual({ width: 640, height: 480 });
    // 14 bits of width - 1 (99), then 14 of height - 1 (49).
    const bits = Buffer.alloc(5);
    bits[0] = 0x2f;
    bits.writeUInt32LE(99 | (49 << 14), 1);
    expect(imageDimensions(webpOf('VP8L', bits))).toEqual({ width: 100, height: 50 });
    const extended = Buffer.alloc(10);
    extended.writeUIntLE(4095, 4, 3);
    extended.writeUIntLE(2047, 7, 3);
    expect(imageDimensions(webpOf('VP8X', extended))).toEqual({ width: 4096, height: 2048 });
  });

  it("turns a JPEG whose EXIF orientation is a quarter turn, as it is shown: a phone's portrait photo is tall", () => {
    // 6 and 8: rotated 90° one way or the other; 5 and 7: also mirrored.
    for (const orientation of [5, 6, 7, 8]) {
      expect(imageDimensions(exifJpegOf(4032, 3024, orientation))).toEqual({ width: 3024, height: 4032 });
    }
    // 1: as stored; 3: upside down; 2 and 4: mirrored only.
    for (const orientation of [1, 2, 3, 4]) {
      expect(imageDimensions(exifJpegOf(4032, 3024, orientation))).toEqual({ width: 4032, height: 3024 });
    }
  });

  it('states nothing for a file that names no size, or is no image it knows', () => {
    // The samples' JPEG and WebP are headers without a frame.
    expect(imageDimensions(jpeg())).toBeUndefined();
    expect(imageDimensions(webp())).toBeUndefined();
    expect(imageDimensions(png(0, 0))).toBeUndefined();
    expect(imageDimensions(Buffer.from('not an image at all, just some text'))).toBeUndefined();
    expect(imageDimensions(Buffer.alloc(0))).toBeUndefined();
  });
});
