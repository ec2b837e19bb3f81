import type { ErrorDetail } from '../../core/errors.js';
import type { ContentLimit, ItemFacts, SettingsCheck, SettingsOf, StoredSettingsOf } from '../provider-adapter.js';
import { mediaBytes } from '../provider-adapter.js';

const MB = 1024 * 1024;

// A pin (Pinterest API v5, `POST /v5/pins`, and Pinterest's help on pin specifications): a description
// of up to 500 characters (the API's schema says 800, Pinterest's pages 500: the lower holds, so what
// passes here is taken whichever is right), a title of up to 100, a link of up to 2,048, alt text of up
// to 500. Its media: one image (JPEG or PNG as the API's `content_type` names them, WebP, GIF, BMP and
// TIFF as the help pages add; up to 20 MB), or a carousel of 2 to 5 images (`multiple_image_urls`), or one
// video (MP4, MOV or M4V of up to 2 GB, lasting 4 seconds to 15 minutes). A pin has no text-only form.
export const PINTEREST_CONTENT_LIMIT: ContentLimit = { max: 500, unit: 'characters', becomes: 'description' };
export const PINTEREST_ALT_TEXT_MAX = 500;
export const PINTEREST_CAROUSEL_MIN = 2;
export const PINTEREST_CAROUSEL_MAX = 5;
export const PINTEREST_IMAGE = {
  types: ['image/jpeg', 'image/png', 'image/webp', 'image/gif', 'image/bmp', 'image/tiff'],
  maxBytes: 20 * MB,
};
export const PINTEREST_VIDEO = {
  types: ['video/mp4', 'video/quicktime', 'video/x-m4v'],
  maxBytes: 2048 * MB,
  minDurationMs: 4_000,
  maxDurationMs: 900_000,
};

/** The image types Pinterest takes as base64 in the request (`image_base64`'s `content_type`). */
const BASE64_TYPES = ['image/jpeg', 'image/png'];

/** The problems of one pin by Pinterest's rules, each naming its field. */
export function pinProblems(item: ItemFacts): ErrorDetail[] {
  const channel = `channel ${item.channelId}`;
  const problems: ErrorDetail[] = [];
  if (item.content.length > PINTEREST_CONTENT_LIMIT.max)
    problems.push({
      path: item.paths.content,
      message:
        `Pinterest takes a description of ${PINTEREST_CONTENT_LIMIT.max} characters (${channel}); ` +
        `this has ${item.content.length}.`,
    });
  const media = item.media;
  if (!media) return problems;
  const videos = media.filter((one) => one.kind === 'video').length;
  if (media.length === 0 || (videos > 0 && media.length > 1) || media.length > PINTEREST_CAROUSEL_MAX)
    problems.push({
      path: item.paths.mediaIds,
      message:
        `A Pinterest pin has one image, one video, or a carousel of ${PINTEREST_CAROUSEL_MIN} to ` +
        `${PINTEREST_CAROUSEL_MAX} images (${channel}); this has ${describe(media.length, videos)}.`,
    });
  if (item.hasAltTexts && media.length > 1)
    problems.push({
      path: item.paths.altTexts,
      message:
        'Pinterest takes alternative text on a pin of one image or video, not on a carousel’s images ' +
        `(${channel}).`,
    });
  media.forEach((one, index) => {
    const video = one.kind === 'video';
    const rules = video ? PINTEREST_VIDEO : PINTEREST_IMAGE;
    const what = video ? 'videos' : 'images';
    const types = video ? 'MP4, MOV or M4V' : 'JPEG, PNG, WebP, GIF, BMP or TIFF';
    const lasts = `this one lasts ${seconds(one.duration_ms ?? 0)}`;
    const bytes = mediaBytes(one);
    let problem: string | undefined;
    if (!rules.types.includes(one.content_type)) problem = `${what} of type ${types}; this one is ${one.content_type}`;
    else if (bytes > rules.maxBytes)
      problem = `${what} of up to ${rules.maxBytes / MB} MB; this one has ${bytes.toLocaleString('en-US')} bytes`;
    else if (video && one.duration_ms !== null && one.duration_ms > PINTEREST_VIDEO.maxDurationMs)
      problem = `videos of up to ${seconds(PINTEREST_VIDEO.maxDurationMs)}; ${lasts}`;
    else if (video && one.duration_ms !== null && one.duration_ms < PINTEREST_VIDEO.minDurationMs)
      problem = `videos of at least ${seconds(PINTEREST_VIDEO.minDurationMs)}; ${lasts}`;
    if (problem)
      problems.push({ path: `${item.paths.mediaIds}[${index}]`, message: `Pinterest takes ${problem} (${channel}).` });
  });
  return problems;
}

function describe(count: number, videos: number): string {
  if (count === 0) return 'no media';
  if (videos === 0) return `${count} images`;
  return `${count} media, ${videos} of them ${videos === 1 ? 'a video' : 'videos'}`;
}

const seconds = (ms: number) => `${ms / 1000} seconds`;

/**
 * A pin's settings: its media by Pinterest's rules, a section only with its board (the contract's
 * patterns hold the ids' form), and a cover frame only on a video pin.
 */
export function pinterestProblems(
  check: SettingsCheck<'pinterest'>,
  mediaUnreachable: string | undefined,
): Promise<ErrorDetail[]> {
  const { item, settings, path } = check;
  const problems = pinProblems(item);
  // Media Pinterest cannot download go as base64, which Pinterest takes of JPEG and PNG only.
  if (mediaUnreachable)
    item.media?.forEach((one, index) => {
      if (one.kind === 'image' && !BASE64_TYPES.includes(one.content_type))
        problems.push({
          path: `${item.paths.mediaIds}[${index}]`,
          message:
            `Pinterest takes this server's images as JPEG or PNG only, since it cannot download them ` +
            `(${mediaUnreachable}); this one is ${one.content_type} (channel ${item.channelId}).`,
        });
    });
  if (settings.coverImageKeyFrameTime !== undefined && item.media && !item.media.some((one) => one.kind === 'video'))
    problems.push({
      path: `${path}.coverImageKeyFrameTime`,
      message: `A cover frame is for a video pin; this pin has no video (channel ${item.channelId}).`,
    });
  return Promise.resolve(problems);
}

export const pinterestDefaults = (settings: SettingsOf<'pinterest'>): StoredSettingsOf<'pinterest'> => ({
  ...settings,
});
