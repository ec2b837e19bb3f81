import { describe, expect, it } from 'vitest';
import { readVideoDuration } from '../src/media/video-duration.js';
import { mp4, mp4WithDuration, webmWithDuration } from './support/media-samples.js';

// The length of a video, read from its container with a few ranged reads, as the TikTok rules need it.
function reader(file: Buffer, reads: { start: number; length: number }[] = []) {
  return (start: number, length: number) => {
    reads.push({ start, length });
    return Promise.resolve(file.subarray(start, start + length));
  };
}

describe('readVideoDuration', () => {
  it('reads an MP4’s movie header, before or after the media data, in either version', async () => {
    for (const options of [{}, { indexFirst: true }, { version: 1 as const }]) {
      const file = mp4WithDuration(42.5, options);
      expect(await readVideoDuration(reader(file), file.length, 'video/mp4')).toBe(42_500);
    }
    const mov = mp4WithDuration(3, { mdatBytes: 10 });
    expect(await readVideoDuration(reader(mov), mov.length, 'video/quicktime')).toBe(3000);
  });

  it('hops over the media data instead of reading it', async () => {
    const file = mp4WithDuration(600, { mdatBytes: 20 * 1024 * 1024 });
    const reads: { start: number; length: number }[] = [];
    expect(await readVideoDuration(reader(file, reads), file.length, 'video/mp4')).toBe(600_000);
    expect(reads.reduce((sum, read) => sum + read.length, 0)).toBeLessThan(4096);
  });

  it('reads a WebM’s Info/Duration, and answers null when a live recording states none', async () => {
    const file = webmWithDuration(61.25);
    expect(await readVideoDuration(reader(file), file.length, 'video/webm')).toBe(61_250);
    const live = webmWithDuration(null);
    expect(await readVideoDuration(reader(live), live.length, 'video/webm')).toBeNull();
  });

  it('answers null for a file that does not say, or is broken, and for images', async () => {
    const bare = mp4(4096);
    expect(await readVideoDuration(reader(bare), bare.length, 'video/mp4')).toBeNull();
    const cut = mp4WithDuration(10).subarray(0, 1060);
    expect(await readVideoDuration(reader(cut), cut.length, 'video/mp4')).toBeNull();
    const garbage = Buffer.from('not a video at all, just text');
    expect(await readVideoDuration(reader(garbage), garbage.length, 'video/webm')).toBeNull();
    expect(await readVideoDuration(reader(garbage), garbage.length, 'image/png')).toBeNull();
  });
});
