import type { MediaContentType } from '../core/contract.js';

/** Reads `length` bytes of the file from `start` (fewer at its end). */
export type RangeReader = (start: number, length: number) => Promise<Buffer>;

/** Reads ranges of a stored object through `open` (the storage's ranged get). */
export function storedRanges(
  open: (range: { start: number; end: number }) => Promise<NodeJS.ReadableStream>,
  size: number,
): RangeReader {
  return async (start, length) => {
    const end = Math.min(size, start + length) - 1;
    if (end < start) return Buffer.alloc(0);
    const chunks: Buffer[] = [];
    for await (const chunk of await open({ start, end }))
      chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
    return Buffer.concat(chunks);
  };
}

// Ranged reads, not a streaming parser: an MP4's index (`moov`) is often at the end of a file of
// gigabytes, which a few reads of box headers reach without reading what lies between.
const MAX_INDEX_BYTES = 64 * 1024 * 1024;
const MAX_BOX_HOPS = 1000;
const WEBM_HEAD_BYTES = 256 * 1024;

/**
 * The length of a video in milliseconds, from its container's own header: `mvhd` of an MP4 or
 * QuickTime file, `Info/Duration` of a WebM one. `null` when the file does not say (a WebM recorded
 * live has no duration) or cannot be read as its type.
 */
export async function readVideoDuration(
  read: RangeReader,
  size: number,
  contentType: MediaContentType,
): Promise<number | null> {
  try {
    if (contentType === 'video/mp4' || contentType === 'video/quicktime') return await mp4Duration(read, size);
    if (contentType === 'video/webm') return webmDuration(await read(0, Math.min(size, WEBM_HEAD_BYTES)));
  } catch {
    // A malformed container: its duration is unknown, like a file that does not state it.
  }
  return null;
}

/** Walks the top-level boxes (`size`, `type`, 64-bit `largesize` when size is 1) to `moov`, then reads `mvhd`. */
async function mp4Duration(read: RangeReader, size: number): Promise<number | null> {
  let offset = 0;
  for (let hop = 0; hop < MAX_BOX_HOPS && offset + 8 <= size; hop++) {
    const header = await read(offset, 16);
    if (header.length < 8) return null;
    let boxSize = header.readUInt32BE(0);
    const type = header.toString('latin1', 4, 8);
    let headerSize = 8;
    if (boxSize === 1) {
      if (header.length < 16) return null;
      boxSize = Number(header.readBigUInt64BE(8));
      headerSize = 16;
    } else if (boxSize === 0) {
      boxSize = size - offset;
    }
    if (boxSize < headerSize) return null;
    if (type === 'moov') {
      if (boxSize > MAX_INDEX_BYTES) return null;
      return mvhdDuration(await read(offset + headerSize, boxSize - headerSize));
    }
    offset += boxSize;
  }
  return null;
}

function mvhdDuration(moov: Buffer): number | null {
  let offset = 0;
  while (offset + 8 <= moov.length) {
    const boxSize = moov.readUInt32BE(offset);
    const type = moov.toString('latin1', offset + 4, offset + 8);
    if (boxSize < 8) return null;
    if (type === 'mvhd') {
      const body = moov.subarray(offset + 8, offset + boxSize);
      const version = body[0];
      // version 0: creation and modification times of 4 bytes; version 1: of 8, and an 8-byte duration.
      const timescale = version === 1 ? body.readUInt32BE(20) : body.readUInt32BE(12);
      const duration = version === 1 ? Number(body.readBigUInt64BE(24)) : body.readUInt32BE(16);
      if (timescale === 0) return null;
      return Math.round((duration / timescale) * 1000);
    }
    offset += boxSize;
  }
  return null;
}

const EBML_SEGMENT = 0x18538067;
const EBML_INFO = 0x1549a966;
const EBML_TIMECODE_SCALE = 0x2ad7b1;
const EBML_DURATION = 0x4489;

/** An EBML variable-length integer at `offset`: its value (marker bit removed unless `keepMarker`) and length. */
function vint(
  buffer: Buffer,
  offset: number,
  keepMarker: boolean,
): { value: number; length: number; unknown: boolean } | null {
  const first = buffer[offset];
  if (first === undefined || first === 0) return null;
  const length = Math.clz32(first) - 23;
  if (offset + length > buffer.length) return null;
  let value = keepMarker ? first : first & (0xff >> length);
  let allOnes = value === 0xff >> length;
  for (let i = 1; i < length; i++) {
    value = value * 256 + buffer[offset + i]!;
    if (buffer[offset + i] !== 0xff) allOnes = false;
  }
  return { value, length, unknown: !keepMarker && allOnes };
}

/** Finds Segment → Info in the head of a WebM file and reads its Duration, scaled by TimecodeScale. */
function webmDuration(head: Buffer): number | null {
  let offset = 0;
  let end = head.length;
  while (offset < end) {
    const id = vint(head, offset, true);
    if (!id) return null;
    const size = vint(head, offset + id.length, false);
    if (!size) return null;
    const body = offset + id.length + size.length;
    if (id.value === EBML_SEGMENT) {
      // Into the segment: its children follow (a live recording's segment has an unknown size).
      offset = body;
      end = size.unknown ? head.length : Math.min(head.length, body + size.value);
      continue;
    }
    if (id.value === EBML_INFO) return infoDuration(head.subarray(body, Math.min(head.length, body + size.value)));
    if (size.unknown) return null;
    offset = body + size.value;
  }
  return null;
}

function infoDuration(info: Buffer): number | null {
  let scale = 1_000_000;
  let duration: number | null = null;
  let offset = 0;
  while (offset < info.length) {
    const id = vint(info, offset, true);
    const size = id && vint(info, offset + id.length, false);
    if (!id || !size) break;
    const body = offset + id.length + size.length;
    if (id.value === EBML_TIMECODE_SCALE) scale = info.readUIntBE(body, Math.min(6, size.value));
    if (id.value === EBML_DURATION) duration = size.value === 4 ? info.readFloatBE(body) : info.readDoubleBE(body);
    offset = body + size.value;
  }
  // Duration counts TimecodeScale nanoseconds.
  return duration === null || !Number.isFinite(duration) ? null : Math.round((duration * scale) / 1_000_000);
}
