import type { ErrorDetail } from '../core/errors.js';
import type { Media } from '../media/tables.js';
import type { ItemFacts } from './provider-adapter.js';

/** The rule of the video networks: a post carries exactly one video. */
export function exactlyOneVideo(item: ItemFacts, network: string): ErrorDetail[] {
  if (!item.media) return [];
  if (item.media.length === 1 && item.media[0]?.kind === 'video') return [];
  return [
    {
      path: item.paths.mediaIds,
      message:
        `A ${network} post needs exactly one video (channel ${item.channelId}); ` +
        `it has ${describeMedia(item.media)}.`,
    },
  ];
}

function describeMedia(media: Pick<Media, 'kind'>[]): string {
  if (media.length === 0) return 'no media';
  const videos = media.filter((m) => m.kind === 'video').length;
  const images = media.length - videos;
  const count = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
  return [videos ? count(videos, 'video') : '', images ? count(images, 'image') : ''].filter(Boolean).join(' and ');
}
