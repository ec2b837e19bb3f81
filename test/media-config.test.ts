import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/core/config.js';
import { MediaPolicy } from '../src/media/media-types.js';

describe('media configuration', () => {
  it('defaults to local disk, all types, 10 MB images, 1 GB videos, 100 MB documents and public addresses only', () => {
    const { media, dataDir } = loadConfig({});
    expect(media.storage).toEqual({ kind: 'local' });
    expect(dataDir).toMatch(/\/data$/);
    expect(media.allowedTypes).toEqual([
      'image/jpeg',
      'image/png',
      'image/gif',
      'image/webp',
      'video/mp4',
      'video/quicktime',
      'video/webm',
      'application/pdf',
    ]);
    expect(media.maxBytes).toEqual({ image: 10 * 1024 * 1024, video: 1024 * 1024 * 1024, document: 100 * 1024 * 1024 });
    expect(media.fetch).toEqual({
      idleTimeoutSeconds: 15,
      maxDurationSeconds: 300,
      allowPrivateAddresses: false,
      allowedRanges: [],
    });
    expect(media.uploadUrlTtlSeconds).toBe(3600);
    expect(media.downloadUrlTtlSeconds).toBe(3600);
  });

  it('reads S3-compatible storage', () => {
    const { media } = loadConfig({
      MEDIA_STORAGE: 's3',
      S3_BUCKET: 'scheduler-media',
      S3_ENDPOINT: 'https://s3.example.net',
      S3_REGION: 'eu-central-1',
      S3_ACCESS_KEY_ID: 'AKIAEXAMPLE',
      S3_SECRET_ACCESS_KEY: 'secret',
      S3_FORCE_PATH_STYLE: 'true',
    });
    expect(media.storage).toEqual({
      kind: 's3',
      bucket: 'scheduler-media',
      endpoint: 'https://s3.example.net',
      region: 'eu-central-1',
      credentials: { accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'secret' },
      forcePathStyle: true,
    });
    // Without keys the SDK's own credential chain (an instance role, …) is used.
    expect(loadConfig({ MEDIA_STORAGE: 's3', S3_BUCKET: 'b' }).media.storage).toMatchObject({
      credentials: undefined,
      endpoint: undefined,
    });
  });

  it('reports every invalid media setting at once', () => {
    expect(() =>
      loadConfig({
        MEDIA_STORAGE: 's3',
        S3_ENDPOINT: 'not a url',
        S3_ACCESS_KEY_ID: 'only-half',
        S3_FORCE_PATH_STYLE: 'yes',
        MEDIA_ALLOWED_TYPES: 'image/png,image/tiff',
        MEDIA_MAX_VIDEO_BYTES: String(6 * 1024 ** 3),
        MEDIA_FETCH_ALLOW_PRIVATE: 'sometimes',
        MEDIA_FETCH_ALLOW_RANGES: '10.0.0.0/8,intranet',
      }),
    ).toThrow(
      new RegExp(
        [
          'S3_BUCKET is required',
          'S3_ENDPOINT must be',
          'S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY',
          'S3_FORCE_PATH_STYLE must be true or false',
          'MEDIA_ALLOWED_TYPES may list only',
          'MEDIA_MAX_VIDEO_BYTES must be',
          'MEDIA_FETCH_ALLOW_PRIVATE must be true or false',
          'MEDIA_FETCH_ALLOW_RANGES must list',
        ]
          .map((part) => `(?=[\\s\\S]*${part})`)
          .join(''),
      ),
    );
  });

  it('narrows the accepted types, and the other types are refused with 415', () => {
    const { media } = loadConfig({ MEDIA_ALLOWED_TYPES: 'video/mp4, IMAGE/JPEG' });
    expect(media.allowedTypes).toEqual(['image/jpeg', 'video/mp4']);
    const policy = new MediaPolicy(media);
    expect(policy.acceptDeclared('Video/MP4')).toBe('video/mp4');
    expect(() => policy.acceptDeclared('image/png')).toThrow(
      expect.objectContaining({
        status: 415,
        message: 'The content type image/png is not accepted; allowed: image/jpeg, video/mp4.',
      }),
    );
    expect(() => policy.acceptDetected({ mediaType: 'image/gif', detected: 'image/gif' })).toThrow(
      expect.objectContaining({
        status: 415,
        message: 'The file is image/gif, which is not accepted; allowed: image/jpeg, video/mp4.',
      }),
    );
  });
});
