import type { ErrorDetail } from '../../core/errors.js';
import type { SettingsCheck } from '../provider-adapter.js';
import { exactlyOneVideo } from '../rules.js';

import type { ContentLimit } from '../provider-adapter.js';

// YouTube Data API, videos resource: a description of at most 5000 bytes, without `<` or `>`.
const DESCRIPTION_MAX_BYTES = 5000;

/** Without settings.description, the content becomes the video's description. */
export const YOUTUBE_CONTENT_LIMIT: ContentLimit = {
  max: DESCRIPTION_MAX_BYTES,
  unit: 'bytes',
  becomes: 'description, unless one is set',
};
const TAGS_MAX = 500;

/**
 * YouTube counts the tags together, with a comma between two tags, and a tag that contains a space
 * as if it were wrapped in quotation marks (YouTube Data API, `snippet.tags`).
 */
export function youtubeTagsLength(tags: string[]): number {
  const commas = Math.max(0, tags.length - 1);
  return tags.reduce((sum, tag) => sum + tag.length + (tag.includes(' ') ? 2 : 0), commas);
}

/** A YouTube post: one video, tags and description within YouTube's limits. */
export function youtubeProblems({ item, settings, path }: SettingsCheck<'youtube'>): ErrorDetail[] {
  const problems = exactlyOneVideo(item, 'YouTube');
  const tagsLength = youtubeTagsLength(settings.tags ?? []);
  if (tagsLength > TAGS_MAX) {
    problems.push({
      path: `${path}.tags`,
      message:
        `YouTube allows ${TAGS_MAX} characters of tags (channel ${item.channelId}); these count ${tagsLength}, ` +
        'with commas between tags and quotes around tags that contain spaces.',
    });
  }
  if (settings.description === undefined) {
    // Without settings.description the content becomes the video's description, under YouTube's rules.
    const bytes = Buffer.byteLength(item.content, 'utf8');
    if (bytes > DESCRIPTION_MAX_BYTES || /[<>]/.test(item.content)) {
      problems.push({
        path: item.paths.content,
        message: `The content becomes the YouTube description (channel ${item.channelId}), which allows ${DESCRIPTION_MAX_BYTES} bytes without < or >; this has ${bytes} bytes${/[<>]/.test(item.content) ? ' and < or >' : ''}. Shorten it or set settings.description.`,
      });
    }
  } else if (Buffer.byteLength(settings.description, 'utf8') > DESCRIPTION_MAX_BYTES) {
    problems.push({
      path: `${path}.description`,
      message:
        `YouTube allows ${DESCRIPTION_MAX_BYTES} bytes of description (channel ${item.channelId}); ` +
        `this has ${Buffer.byteLength(settings.description, 'utf8')}.`,
    });
  }
  return problems;
}
