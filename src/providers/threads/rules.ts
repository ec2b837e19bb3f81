import type { ErrorDetail } from '../../core/errors.js';
import { mediaReachProblems } from '../meta/media-reach.js';
import type { ContentLimit, ItemFacts, SettingsCheck, SettingsOf, StoredSettingsOf } from '../provider-adapter.js';
import { mediaBytes } from '../provider-adapter.js';

const MB = 1024 * 1024;

const graphemes = new Intl.Segmenter('en', { granularity: 'grapheme' });
/** A grapheme that is an emoji: a pictograph (with its modifiers and joiners) or a flag's regional indicators. */
const EMOJI = /\p{Extended_Pictographic}|\p{Regional_Indicator}/u;

/**
 * How Threads counts a post's text against its 500 characters (Threads API, "Posts", Limitations): each
 * character as a reader sees it (a grapheme) counts one, but an emoji counts as many as its UTF-8 bytes
 * (👍 4, 👍🏽 8, a flag 8).
 */
export function threadsTextLength(text: string): number {
  let length = 0;
  for (const { segment } of graphemes.segment(text))
    length += EMOJI.test(segment) ? Buffer.byteLength(segment, 'utf8') : 1;
  return length;
}

/**
 * Links in a text as Threads counts them: every distinct URL. Threads refuses a post with more than 5 when
 * its container is made (`THREADS_API__LINK_LIMIT_EXCEEDED`, since December 22, 2025). Counted here are
 * the URLs a reader can tell as such (with `http://`, `https://` or `www.`); a bare domain Threads might
 * count too is left to Threads.
 */
const URL_PATTERN = /\b(?:https?:\/\/|www\.)[^\s<>"]+/giu;

// A Threads post (Threads API, "Posts" and its media specifications): text of up to 500 characters as
// Threads counts them, at most 5 links; no media (a text post), one image or video, or a carousel of 2 to
// 20 images and videos mixed. Images JPEG or PNG of up to 8 MB; videos MOV or MP4 of up to 1 GB lasting
// more than 0 and at most 300 seconds. A thread's later parts are replies, each its own post by the same
// rules. The link preview card (`link_attachment`, text posts only) has no field in the contract: a link
// in the text gets Threads's preview of the first URL.
export const THREADS_CONTENT_LIMIT: ContentLimit = {
  max: 500,
  unit: 'characters',
  becomes: 'post',
  count: threadsTextLength,
};
export const THREADS_MAX_LINKS = 5;
export const THREADS_CAROUSEL_MAX = 20;
export const THREADS_IMAGE = { types: ['image/jpeg', 'image/png'], maxBytes: 8 * MB };
/**
 * An image's shape (Threads API, media specifications): at most 10:1 either way. (Its width is scaled to
 * 320 to 1,440 pixels, so no size is refused; a video's shape, 0.01:1 to 10:1, is not checked, its pixel
 * size not being read from its container.)
 */
export const THREADS_IMAGE_MAX_ASPECT = 10;
export const THREADS_VIDEO = { types: ['video/mp4', 'video/quicktime'], maxBytes: 1024 * MB, maxDurationMs: 300_000 };
export const THREADS_MAX_PARTS = 25;
/**
 * Alt text goes with each image and video as `alt_text` (Threads API, "Accessibility"), which Meta
 * documents without naming its longest: held to 1,000 characters, as X holds its own.
 */
export const THREADS_ALT_TEXT_MAX = 1000;

/**
 * The problems of one post or thread part by Threads's rules, each naming its field, and whether Threads
 * can download its media from this server (`mediaUnreachable` says why not, see meta/media-reach.ts).
 */
export function threadsPostProblems(item: ItemFacts, mediaUnreachable?: string): ErrorDetail[] {
  const problems: ErrorDetail[] = [...mediaReachProblems(item, 'Threads', mediaUnreachable)];
  const channel = `channel ${item.channelId}`;
  const length = threadsTextLength(item.content);
  if (length > THREADS_CONTENT_LIMIT.max)
    problems.push({
      path: item.paths.content,
      message:
        `Threads takes ${THREADS_CONTENT_LIMIT.max} characters of text, each emoji counted as its UTF-8 bytes ` +
        `(${channel}); this has ${length}.`,
    });
  const links = new Set((item.content.match(URL_PATTERN) ?? []).map((url) => url.toLowerCase())).size;
  if (links > THREADS_MAX_LINKS)
    problems.push({
      path: item.paths.content,
      message: `Threads takes up to ${THREADS_MAX_LINKS} links in a post (${channel}); this has ${links}.`,
    });
  const media = item.media;
  if (!media) return problems;
  if (media.length === 0 && item.content.trim() === '')
    problems.push({ path: item.paths.content, message: `A Threads post has text, media or both (${channel}).` });
  if (media.length > THREADS_CAROUSEL_MAX)
    problems.push({
      path: item.paths.mediaIds,
      message:
        `Threads takes one image or video, or a carousel of 2 to ${THREADS_CAROUSEL_MAX} images and videos ` +
        `(${channel}); this has ${media.length}.`,
    });
  media.forEach((one, index) => {
    const path = `${item.paths.mediaIds}[${index}]`;
    const video = one.kind === 'video';
    const rules = video ? THREADS_VIDEO : THREADS_IMAGE;
    const what = video ? 'videos' : 'images';
    const bytes = mediaBytes(one);
    let problem: string | undefined;
    if (!rules.types.includes(one.content_type))
      problem = `${what} of type ${video ? 'MP4 or MOV' : 'JPEG or PNG'}; this one is ${one.content_type}`;
    else if (bytes > rules.maxBytes)
      problem = `${what} of up to ${rules.maxBytes / MB} MB; this one has ${bytes.toLocaleString('en-US')} bytes`;
    else if (
      !video &&
      one.width !== null &&
      one.height !== null &&
      elongation(one.width, one.height) > THREADS_IMAGE_MAX_ASPECT
    )
      problem =
        `images of an aspect ratio up to ${THREADS_IMAGE_MAX_ASPECT}:1 either way; ` +
        `${one.id} is ${one.width}×${one.height}`;
    else if (video && one.duration_ms !== null && one.duration_ms > THREADS_VIDEO.maxDurationMs)
      problem = `videos of up to ${seconds(THREADS_VIDEO.maxDurationMs)}; this one lasts ${seconds(one.duration_ms)}`;
    else if (video && one.duration_ms === 0) problem = 'videos longer than 0 seconds';
    if (problem) problems.push({ path, message: `Threads takes ${problem} (${channel}).` });
  });
  return problems;
}

const seconds = (ms: number) => `${ms / 1000} seconds`;
/** How many times longer an image is than it is wide, or wider than it is long. */
const elongation = (width: number, height: number) => Math.max(width, height) / Math.min(width, height);

export const threadsProblems = ({ item }: SettingsCheck<'threads'>, mediaUnreachable?: string) =>
  Promise.resolve(threadsPostProblems(item, mediaUnreachable));

export const threadsDefaults = (settings: SettingsOf<'threads'>): StoredSettingsOf<'threads'> => ({
  ...settings,
  replyControl: settings.replyControl ?? 'everyone',
});
