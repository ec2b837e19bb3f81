import type { KnownMediaContentType as MediaContentType } from './types.js';

function startsWith(bytes: Uint8Array, signature: readonly number[], offset = 0): boolean {
  if (bytes.length < offset + signature.length) return false;
  return signature.every((byte, index) => bytes[offset + index] === byte);
}

function ascii(text: string): number[] {
  return [...text].map((char) => char.charCodeAt(0));
}

// ISO base media files (MP4, QuickTime) start with a box whose type is at bytes 4–7; `ftyp` names
// the brand at bytes 8–11, where `qt  ` marks QuickTime. Old QuickTime files start with another box.
const QUICKTIME_BOXES = ['moov', 'mdat', 'wide', 'free', 'skip', 'pnot'].map(ascii);

/** The media type told by the file's first bytes (its magic number), when it is one the API accepts. */
export function sniffContentType(bytes: Uint8Array): MediaContentType | undefined {
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (startsWith(bytes, ascii('GIF87a')) || startsWith(bytes, ascii('GIF89a'))) return 'image/gif';
  if (startsWith(bytes, ascii('RIFF')) && startsWith(bytes, ascii('WEBP'), 8)) return 'image/webp';
  if (startsWith(bytes, ascii('ftyp'), 4)) return startsWith(bytes, ascii('qt  '), 8) ? 'video/quicktime' : 'video/mp4';
  if (QUICKTIME_BOXES.some((box) => startsWith(bytes, box, 4))) return 'video/quicktime';
  // EBML header; WebM is the Matroska profile the API accepts.
  if (startsWith(bytes, [0x1a, 0x45, 0xdf, 0xa3])) return 'video/webm';
  if (startsWith(bytes, ascii('%PDF-'))) return 'application/pdf';
  return undefined;
}

const BY_EXTENSION: Record<string, MediaContentType> = {
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  png: 'image/png',
  gif: 'image/gif',
  webp: 'image/webp',
  mp4: 'video/mp4',
  m4v: 'video/mp4',
  mov: 'video/quicktime',
  qt: 'video/quicktime',
  webm: 'video/webm',
  pdf: 'application/pdf',
};

/** The media type told by the file name's extension, when it is one the API accepts. */
export function contentTypeFromName(fileName: string): MediaContentType | undefined {
  const dot = fileName.lastIndexOf('.');
  return dot === -1 ? undefined : BY_EXTENSION[fileName.slice(dot + 1).toLowerCase()];
}

/**
 * The media type of a file: from its bytes first, because the server checks the bytes and refuses
 * an upload whose declared type differs; from its name when the bytes say nothing.
 */
export function detectContentType(bytes: Uint8Array, fileName: string): MediaContentType | undefined {
  return sniffContentType(bytes) ?? contentTypeFromName(fileName);
}
