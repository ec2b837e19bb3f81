import type { components } from '../../generated/public-v1.js';
import type { MediaContentType } from '../core/contract.js';
import type { MediaStorage } from './storage.js';
import type { Media } from './tables.js';

export type MediaBody = components['schemas']['Media'];

export function mediaKey(organizationId: string, mediaId: string): string {
  return `media/${organizationId}/${mediaId}`;
}

/** The media as the contract shows it, with a fresh signed download URL. */
export async function toMediaBody(storage: MediaStorage, media: Media, urlExpiresAt: Date): Promise<MediaBody> {
  const contentType = media.content_type as MediaContentType;
  return {
    id: media.id,
    fileName: media.file_name,
    contentType,
    kind: media.kind,
    size: Number(media.size),
    durationSec: media.duration_ms === null ? null : media.duration_ms / 1000,
    pageCount: media.page_count,
    url: await storage.signedGetUrl(media.storage_key, { contentType, expiresAt: urlExpiresAt }),
    urlExpiresAt: urlExpiresAt.toISOString(),
    createdAt: media.created_at.toISOString(),
  };
}
