import type { Readable } from 'node:stream';
import type { AppContext } from '../http/context.js';

/** What the media feature is built from: the application's context and where the files are kept. */
export interface MediaContext extends AppContext {
  storage: MediaStorage;
}

/**
 * Where media files live: a directory on this machine or an S3-compatible bucket. Keys are built by
 * the media feature from ids only (`uploads/<org>/<upl_…>`, `media/<org>/<med_…>`).
 */
export interface MediaStorage {
  readonly kind: 'local' | 's3';
  /** Stores exactly `size` bytes under `key`; fails (storing nothing) when the stream has more or fewer. */
  put(key: string, body: Readable, options: { contentType: string; size: number }): Promise<void>;
  /** The bytes of `key`, or those from `start` to `end` inclusive. */
  get(key: string, range?: { start: number; end: number }): Promise<Readable>;
  /** The object's size, or `undefined` when there is no object at `key`. */
  stat(key: string): Promise<{ size: number } | undefined>;
  /** Moves an object to another key; throws ObjectMissingError when there is none at `from`. */
  move(from: string, to: string): Promise<void>;
  /** Deletes the object at `key`, if there is one. */
  delete(key: string): Promise<void>;
  /**
   * A URL that accepts one PUT of exactly `size` bytes of `contentType` until `expiresAt`, and the
   * headers it needs.
   */
  signedPutUrl(
    key: string,
    options: { contentType: string; size: number; expiresAt: Date },
  ): Promise<{ url: string; headers: Record<string, string> }>;
  /** A URL that serves the object as `contentType` until `expiresAt`. */
  signedGetUrl(key: string, options: { contentType: string; expiresAt: Date }): Promise<string>;
}

export class ObjectMissingError extends Error {
  override name = 'ObjectMissingError';
  constructor(readonly key: string) {
    super(`There is no stored object at ${key}.`);
  }
}

/** A stream brought more or fewer bytes than announced. */
export class ObjectSizeError extends Error {
  override name = 'ObjectSizeError';
  constructor(
    readonly expected: number,
    /** What arrived; when `tooLarge`, the count at which the stream was stopped. */
    readonly received: number,
    readonly tooLarge: boolean,
  ) {
    super(
      tooLarge
        ? `More than the declared ${expected} bytes were sent.`
        : `The body had ${received} bytes; ${expected} were declared.`,
    );
  }
}
