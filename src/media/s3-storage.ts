import type { Clock } from '../core/clock.js';
import type { Readable } from 'node:stream';
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { S3StorageConfig } from '../core/config.js';
import { sizeGuard } from '../net/size-guard.js';
import { ObjectMissingError, ObjectSizeError, type MediaStorage } from './storage.js';

const isNotFound = (error: unknown) =>
  error instanceof S3ServiceException &&
  (error.name === 'NotFound' || error.name === 'NoSuchKey' || error.$metadata.httpStatusCode === 404);

/** Media files in an S3-compatible bucket; signed URLs are S3 presigned URLs (Signature Version 4). */
export class S3MediaStorage implements MediaStorage {
  readonly kind = 's3';
  private readonly client: S3Client;
  private readonly bucket: string;

  constructor(
    config: S3StorageConfig,
    /** Signing time of presigned URLs, so that their expiry is the one the API reports. */
    private readonly clock: Clock,
  ) {
    this.bucket = config.bucket;
    this.client = new S3Client({
      region: config.region,
      endpoint: config.endpoint,
      forcePathStyle: config.forcePathStyle,
      credentials: config.credentials,
      // The SDK's default CRC32 checksums (headers and aws-chunked bodies) are not understood by many
      // S3-compatible services; send checksums only where the S3 API requires one.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  async put(key: string, body: Readable, { contentType, size }: { contentType: string; size: number }): Promise<void> {
    // S3 refuses a body whose length differs from Content-Length; the guard gives the same error as local storage.
    const guarded = body.pipe(
      sizeGuard(size, (received, tooLarge) => new ObjectSizeError(size, received, tooLarge), { exact: true }),
    );
    body.on('error', (error) => guarded.destroy(error));
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        Body: guarded,
        ContentLength: size,
        ContentType: contentType,
      }),
    );
  }

  async get(key: string, range?: { start: number; end: number }): Promise<Readable> {
    try {
      const result = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: key,
          Range: range ? `bytes=${range.start}-${range.end}` : undefined,
        }),
      );
      return result.Body as Readable;
    } catch (error) {
      throw isNotFound(error) ? new ObjectMissingError(key) : error;
    }
  }

  async stat(key: string): Promise<{ size: number } | undefined> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { size: head.ContentLength ?? 0 };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  async move(from: string, to: string): Promise<void> {
    // S3 has no rename: a server-side copy (single request up to 5 GiB, the configured maximum) and a delete.
    try {
      await this.client.send(
        new CopyObjectCommand({
          Bucket: this.bucket,
          Key: to,
          CopySource: `${this.bucket}/${from.split('/').map(encodeURIComponent).join('/')}`,
        }),
      );
    } catch (error) {
      throw isNotFound(error) ? new ObjectMissingError(from) : error;
    }
    await this.delete(from);
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }

  async signedPutUrl(
    key: string,
    { contentType, size, expiresAt }: { contentType: string; size: number; expiresAt: Date },
  ) {
    const command = new PutObjectCommand({
      Bucket: this.bucket,
      Key: key,
      ContentType: contentType,
      ContentLength: size,
    });
    const url = await getSignedUrl(this.client, command, {
      ...this.validity(expiresAt),
      // Signed, so S3 itself refuses another type or size.
      signableHeaders: new Set(['content-type', 'content-length']),
    });
    return { url, headers: { 'Content-Type': contentType, 'Content-Length': String(size) } };
  }

  async signedGetUrl(
    key: string,
    { contentType, expiresAt }: { contentType: string; expiresAt: Date },
  ): Promise<string> {
    const command = new GetObjectCommand({ Bucket: this.bucket, Key: key, ResponseContentType: contentType });
    return getSignedUrl(this.client, command, this.validity(expiresAt));
  }

  private validity(expiresAt: Date): { signingDate: Date; expiresIn: number } {
    // X-Amz-Date has whole seconds; sign from the start of the current second so the URL ends at `expiresAt`.
    const signingDate = new Date(Math.floor(this.clock.now().getTime() / 1000) * 1000);
    return { signingDate, expiresIn: Math.max(1, Math.round((expiresAt.getTime() - signingDate.getTime()) / 1000)) };
  }

  destroy(): void {
    this.client.destroy();
  }
}
