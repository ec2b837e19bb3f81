import { fileTypeFromBuffer } from 'file-type';
import type { MediaConfig } from '../core/config.js';
import type { MediaContentType, MediaKind } from '../core/contract.js';
import { PayloadTooLargeError, UnsupportedMediaTypeError } from '../core/errors.js';

/** How many leading bytes are enough to recognise every accepted type (file-type's own sample size). */
export const SNIFF_BYTES = 4100;

const EXTENSION: Record<MediaContentType, string> = {
  'image/jpeg': 'jpg',
  'image/png': 'png',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'video/mp4': 'mp4',
  'video/quicktime': 'mov',
  'video/webm': 'webm',
  'application/pdf': 'pdf',
};

const KIND: Record<MediaContentType, MediaKind> = {
  'image/jpeg': 'image',
  'image/png': 'image',
  'image/gif': 'image',
  'image/webp': 'image',
  'video/mp4': 'video',
  'video/quicktime': 'video',
  'video/webm': 'video',
  'application/pdf': 'document',
};

// Variants that file-type names on their own but that are files of an accepted type: an animated PNG
// is a valid PNG, and an M4V is an MP4 with Apple's brand in its `ftyp` box.
const ALIASES: Record<string, MediaContentType> = {
  'image/apng': 'image/png',
  'video/x-m4v': 'video/mp4',
};

export function kindOf(contentType: MediaContentType): MediaKind {
  return KIND[contentType];
}

/** The kind's name in a sentence about its limit: "Images may be at most …". */
export function kindPlural(kind: MediaKind): string {
  return { image: 'Images', video: 'Videos', document: 'Documents' }[kind];
}

export function extensionOf(contentType: MediaContentType): string {
  return EXTENSION[contentType];
}

export function isMediaContentType(value: string): value is MediaContentType {
  return value in KIND;
}

/** The media type of a file from its first bytes, or a description of what it is when it is not a media type. */
export async function sniffContentType(head: Uint8Array): Promise<{ mediaType?: MediaContentType; detected: string }> {
  const result = await fileTypeFromBuffer(head);
  if (!result) return { detected: 'of an unknown type' };
  const mime = ALIASES[result.mime] ?? result.mime;
  return isMediaContentType(mime) ? { mediaType: mime, detected: mime } : { detected: result.mime };
}

/** The limits and accepted types of new media. */
export class MediaPolicy {
  constructor(private readonly config: Pick<MediaConfig, 'allowedTypes' | 'maxBytes'>) {}

  get allowedTypes(): readonly MediaContentType[] {
    return this.config.allowedTypes;
  }

  /** The largest file of any accepted type: the cap before the type is known. */
  get largestAllowed(): number {
    const kinds = new Set(this.config.allowedTypes.map(kindOf));
    return Math.max(...[...kinds].map((kind) => this.config.maxBytes[kind]));
  }

  maxBytes(contentType: MediaContentType): number {
    return this.config.maxBytes[kindOf(contentType)];
  }

  /** The accepted type named by `declared` (any case), or 415. */
  acceptDeclared(declared: string): MediaContentType {
    const type = declared.toLowerCase();
    if (isMediaContentType(type) && this.config.allowedTypes.includes(type)) return type;
    throw this.unsupported(`The content type ${declared} is not accepted`);
  }

  /** 415 unless the sniffed type is accepted. */
  acceptDetected(sniffed: { mediaType?: MediaContentType; detected: string }): MediaContentType {
    if (sniffed.mediaType && this.config.allowedTypes.includes(sniffed.mediaType)) return sniffed.mediaType;
    throw this.unsupported(`The file is ${sniffed.detected}, which is not accepted`);
  }

  /** 413 when `size` bytes are too many for the type. */
  checkSize(contentType: MediaContentType, size: number): void {
    const limit = this.maxBytes(contentType);
    if (size > limit) {
      throw new PayloadTooLargeError(
        `${kindPlural(kindOf(contentType))} may be at most ${limit} bytes; this one has ${size}.`,
      );
    }
  }

  private unsupported(subject: string): UnsupportedMediaTypeError {
    return new UnsupportedMediaTypeError(`${subject}; allowed: ${this.config.allowedTypes.join(', ')}.`);
  }
}
