import { Transform, type TransformCallback } from 'node:stream';
import type { MediaContentType } from '../core/contract.js';
import { PayloadTooLargeError } from '../core/errors.js';
import { kindOf, kindPlural, SNIFF_BYTES, sniffContentType, type MediaPolicy } from './media-types.js';

/**
 * Passes a download through while recognising its type from the first bytes (415 at once when the
 * type is not accepted) and cutting it off as soon as it passes that type's size limit (413), so a
 * refused file is never read to its end.
 */
export class MediaInspector extends Transform {
  contentType: MediaContentType | undefined;
  received = 0;
  private head: Buffer[] = [];
  private headLength = 0;
  private limit: number;

  constructor(
    private readonly policy: MediaPolicy,
    /** The length the server announced, refused before reading when over the limit. */
    private readonly announced: number | undefined,
  ) {
    super();
    this.limit = policy.largestAllowed;
    if (announced !== undefined && announced > this.limit) throw this.tooLarge(announced);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.received += chunk.length;
    if (this.received > this.limit) return callback(this.tooLarge());
    if (this.contentType) return callback(null, chunk);
    this.head.push(chunk);
    this.headLength += chunk.length;
    if (this.headLength < SNIFF_BYTES) return callback();
    this.recognise().then(() => callback(null, this.takeHead()), callback);
  }

  override _flush(callback: TransformCallback): void {
    if (this.contentType) return callback();
    this.recognise().then(() => callback(null, this.takeHead()), callback);
  }

  private async recognise(): Promise<void> {
    const type = this.policy.acceptDetected(await sniffContentType(Buffer.concat(this.head).subarray(0, SNIFF_BYTES)));
    this.contentType = type;
    this.limit = this.policy.maxBytes(type);
    if (this.announced !== undefined && this.announced > this.limit) throw this.tooLarge(this.announced);
    if (this.received > this.limit) throw this.tooLarge();
  }

  private takeHead(): Buffer {
    const head = Buffer.concat(this.head);
    this.head = [];
    return head;
  }

  private tooLarge(size?: number): PayloadTooLargeError {
    const what = this.contentType ? kindPlural(kindOf(this.contentType)) : 'Files';
    return new PayloadTooLargeError(`${what} may be at most ${this.limit} bytes; this one has ${size ?? 'more'}.`);
  }
}
