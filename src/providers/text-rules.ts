import type { ErrorDetail } from '../core/errors.js';
import type { ContentLimit, ItemFacts } from './provider-adapter.js';

/**
 * The rules the text networks (Bluesky, Mastodon, X) share for a post or a part of a thread: its
 * text within the network's length as the network counts it, and up to so many images, or one
 * video alone.
 */
export interface TextNetworkLimits {
  network: string;
  content: ContentLimit & { count: (text: string) => number };
  maxImages: number;
}

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** What a reader sees as characters: grapheme clusters (an emoji with its modifiers is one). */
export function graphemeCount(text: string): number {
  let count = 0;
  for (const _ of graphemes.segment(text)) count += 1;
  return count;
}

export function textPostProblems(item: ItemFacts, limits: TextNetworkLimits): ErrorDetail[] {
  const { network, content, maxImages } = limits;
  const problems: ErrorDetail[] = [];
  const length = content.count(item.content);
  if (length > content.max) {
    problems.push({
      path: item.paths.content,
      message:
        `${network} takes ${content.max} ` +
        `${content.unit === 'weighted' ? 'characters as it weighs them' : content.unit} of text ` +
        `(channel ${item.channelId}); this has ${length}.`,
    });
  }
  if (!item.media) return problems;
  const videos = item.media.filter((m) => m.kind === 'video').length;
  const images = item.media.length - videos;
  if (videos > 0 && item.media.length > 1) {
    problems.push({
      path: item.paths.mediaIds,
      message: `A ${network} post carries one video alone, or up to ${maxImages} images (channel ${item.channelId}).`,
    });
  } else if (images > maxImages) {
    problems.push({
      path: item.paths.mediaIds,
      message: `A ${network} post carries up to ${maxImages} images (channel ${item.channelId}); this has ${images}.`,
    });
  }
  return problems;
}
