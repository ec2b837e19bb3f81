import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { sizeGuard } from '../net/size-guard.js';
import { ObjectMissingError, ObjectSizeError, type MediaStorage } from './storage.js';
import type { UrlSigner } from './url-signer.js';

/** Where this server answers signed PUTs and GETs of locally stored files (outside the Public API). */
export const LOCAL_FILES_PATH = '/media-files';

// Keys are made of ids only; anything else (`..`, dots, empty segments) never reaches the file system.
const KEY = /^[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)*$/;

export type SignedRequestCheck =
  | { ok: true; contentType: string; size: number | undefined }
  | { ok: false; reason: 'invalid' | 'expired'; expiresAt?: Date };

/**
 * Media files in a directory of this machine (the embedded default). Signed URLs point at this server
 * (`LOCAL_FILES_PATH`), which verifies them with `verify`.
 */
export class LocalMediaStorage implements MediaStorage {
  readonly kind = 'local';

  constructor(
    private readonly root: string,
    private readonly signer: UrlSigner,
    /** Read at each call: the origin may be known only once the server listens. */
    private readonly origin: () => string,
  ) {}

  static isKey(key: string): boolean {
    return KEY.test(key);
  }

  pathOf(key: string): string {
    if (!KEY.test(key)) throw new Error(`Not a media storage key: ${JSON.stringify(key)}`);
    return path.join(this.root, ...key.split('/'));
  }

  async put(key: string, body: Readable, { size }: { contentType: string; size: number }): Promise<void> {
    const target = this.pathOf(key);
    // Written aside and renamed into place, so a reader never sees a half-written file and a failed
    // upload leaves nothing behind.
    const partial = path.join(this.root, '.partial', `${randomBytes(12).toString('hex')}`);
    await fsp.mkdir(path.dirname(partial), { recursive: true });
    await fsp.mkdir(path.dirname(target), { recursive: true });
    try {
      await pipeline(
        body,
        sizeGuard(size, (received, tooLarge) => new ObjectSizeError(size, received, tooLarge), { exact: true }),
        fs.createWriteStream(partial, { flags: 'wx' }),
      );
      await fsp.rename(partial, target);
    } catch (error) {
      await fsp.rm(partial, { force: true });
      throw error;
    }
  }

  async get(key: string, range?: { start: number; end: number }): Promise<Readable> {
    const file = this.pathOf(key);
    const handle = await fsp.open(file).catch((error: NodeJS.ErrnoException) => {
      throw error.code === 'ENOENT' ? new ObjectMissingError(key) : error;
    });
    return handle.createReadStream(range ? { start: range.start, end: range.end } : {});
  }

  async stat(key: string): Promise<{ size: number } | undefined> {
    try {
      const stats = await fsp.stat(this.pathOf(key));
      return stats.isFile() ? { size: stats.size } : undefined;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  async move(from: string, to: string): Promise<void> {
    const target = this.pathOf(to);
    await fsp.mkdir(path.dirname(target), { recursive: true });
    try {
      await fsp.rename(this.pathOf(from), target);
    } catch (error) {
      throw (error as NodeJS.ErrnoException).code === 'ENOENT' ? new ObjectMissingError(from) : error;
    }
  }

  async delete(key: string): Promise<void> {
    await fsp.rm(this.pathOf(key), { force: true });
  }

  signedPutUrl(
    key: string,
    { contentType, size, expiresAt }: { contentType: string; size: number; expiresAt: Date },
  ): Promise<{ url: string; headers: Record<string, string> }> {
    const expires = String(Math.floor(expiresAt.getTime() / 1000));
    const signature = this.signer.sign(['PUT', key, expires, contentType, String(size)]);
    const query = new URLSearchParams({ expires, size: String(size), type: contentType, signature });
    return Promise.resolve({
      url: `${this.urlOf(key)}?${query.toString()}`,
      headers: { 'Content-Type': contentType, 'Content-Length': String(size) },
    });
  }

  signedGetUrl(key: string, { contentType, expiresAt }: { contentType: string; expiresAt: Date }): Promise<string> {
    const expires = String(Math.floor(expiresAt.getTime() / 1000));
    const signature = this.signer.sign(['GET', key, expires, contentType]);
    const query = new URLSearchParams({ expires, type: contentType, signature });
    return Promise.resolve(`${this.urlOf(key)}?${query.toString()}`);
  }

  /**
   * Checks a request to a signed URL: the signature first (an altered URL learns nothing, not even
   * whether it expired), then the expiry.
   */
  verify(method: 'GET' | 'PUT', key: string, query: Record<string, unknown>, now: Date): SignedRequestCheck {
    const text = (name: string) => (typeof query[name] === 'string' ? query[name] : '');
    const expires = text('expires');
    const contentType = text('type');
    const size = text('size');
    const parts = method === 'PUT' ? ['PUT', key, expires, contentType, size] : ['GET', key, expires, contentType];
    if (!KEY.test(key) || !/^\d{1,12}$/.test(expires) || !this.signer.verify(parts, text('signature'))) {
      return { ok: false, reason: 'invalid' };
    }
    const expiresAt = new Date(Number(expires) * 1000);
    if (now.getTime() >= expiresAt.getTime()) return { ok: false, reason: 'expired', expiresAt };
    return { ok: true, contentType, size: method === 'PUT' ? Number(size) : undefined };
  }

  private urlOf(key: string): string {
    return `${this.origin()}${LOCAL_FILES_PATH}/${key}`;
  }
}
