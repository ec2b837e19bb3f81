import type { ErrorDetail } from '../core/errors.js';
import { mediaBytes, type ContentLimit, type ItemFacts, type MediaFacts } from './provider-adapter.js';

/** What a network takes of one kind of media: its types, the largest file, and a video's length. */
export interface MediaLimits {
  /** Content types as the network names them; `image/*` takes every image. */
  types: readonly string[];
  maxBytes: number;
  /** A video's shortest and longest length, where the network bounds it. */
  minDurationMs?: number;
  maxDurationMs?: number;
}

/**
 * The rules the text networks (Bluesky, Mastodon, X) share for a post or a part of a thread: its
 * text within the network's length as the network counts it, and up to so many images, or one
 * video alone, each of a type and size the network takes.
 */
export interface TextNetworkLimits {
  network: string;
  content: ContentLimit & { count: (text: string) => number };
  maxImages: number;
  image: MediaLimits;
  video: MediaLimits;
  /** Where a GIF is a media of its own (X's animated GIF): alone in a post, with its own limits. */
  gif?: MediaLimits;
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
  const isGif = (media: MediaFacts) => limits.gif !== undefined && media.content_type === 'image/gif';
  const videos = item.media.filter((m) => m.kind === 'video').length;
  const gifs = item.media.filter(isGif).length;
  const images = item.media.length - videos;
  if ((videos > 0 || gifs > 0) && item.media.length > 1) {
    problems.push({
      path: item.paths.mediaIds,
      message:
        `${network} takes one video alone, ${limits.gif ? 'or one GIF alone, ' : ''}` +
        `or up to ${maxImages} images in a post (channel ${item.channelId}).`,
    });
  } else if (images > maxImages) {
    problems.push({
      path: item.paths.mediaIds,
      message: `${network} takes up to ${maxImages} images in a post (channel ${item.channelId}); this has ${images}.`,
    });
  }
  item.media.forEach((media, index) => {
    const [what, rules] =
      media.kind === 'video'
        ? (['videos', limits.video] as const)
        : isGif(media)
          ? (['GIFs', limits.gif!] as const)
          : (['images', limits.image] as const);
    const problem = mediaProblem(media, what, rules);
    if (problem)
      problems.push({
        path: `${item.paths.mediaIds}[${index}]`,
        message: `${network} takes ${problem} (channel ${item.channelId}).`,
      });
  });
  return problems;
}

/**
 * What is wrong with one media by the network's limits of its kind, as the end of a sentence that
 * begins with the network's name: its type, else its size, else its length. Media are refused rather
 * than converted: the person who chose a file decides how to make it smaller or shorter.
 */
function mediaProblem(media: MediaFacts, what: string, rules: MediaLimits): string | undefined {
  const type = media.content_type;
  if (rules.types.length === 0) return `no ${what}`;
  if (!rules.types.some((taken) => taken === type || (taken.endsWith('/*') && type.startsWith(taken.slice(0, -1)))))
    return `${what} of type ${listed(rules.types)}; this one is ${type}`;
  const bytes = mediaBytes(media);
  if (bytes > rules.maxBytes) return `${what} of up to ${sizeText(rules.maxBytes)}; this one has ${sizeText(bytes)}`;
  const duration = media.duration_ms;
  if (duration === null) return undefined;
  if (rules.maxDurationMs !== undefined && duration > rules.maxDurationMs)
    return `${what} of up to ${seconds(rules.maxDurationMs)}; this one lasts ${seconds(duration)}`;
  if (rules.minDurationMs !== undefined && duration < rules.minDurationMs)
    return `${what} of at least ${seconds(rules.minDurationMs)}; this one lasts ${seconds(duration)}`;
  return undefined;
}

const MB = 1024 * 1024;

/** Bytes as a reader compares them with a network's page: whole megabytes as such, else every byte. */
function sizeText(bytes: number): string {
  const exact = `${bytes.toLocaleString('en-US')} bytes`;
  return bytes % MB === 0 ? `${bytes / MB} MB (${exact})` : exact;
}

const seconds = (ms: number) => `${ms / 1000} seconds`;

function listed(values: readonly string[]): string {
  return values.length === 1 ? values[0]! : `${values.slice(0, -1).join(', ')} or ${values.at(-1)}`;
}
