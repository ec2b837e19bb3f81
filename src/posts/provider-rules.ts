import type { components } from '../../generated/public-v1.js';
import type { ErrorDetail } from '../core/errors.js';
import type { Media } from '../media/tables.js';
import type { TikTokCreatorInfo } from '../providers/tiktok.js';

type YouTubeSettings = components['schemas']['YouTubeSettings'];
type TikTokSettings = components['schemas']['TikTokSettings'];

/** Where the parts of one post sit in the request, so each problem names its field. */
export interface ItemPaths {
  channel: string;
  content: string;
  mediaIds: string;
  /** `undefined` in the single-content form, which carries no settings. */
  settings: string | undefined;
}

/** What the rules need to know about one post. `media` is `undefined` when some media id is unknown (reported already). */
export interface ItemFacts {
  channelId: string;
  content: string;
  media: Pick<Media, 'kind'>[] | undefined;
  paths: ItemPaths;
}

// TikTok counts the caption in UTF-16 code units, as JavaScript's `length` does.
const TIKTOK_CAPTION_MAX = 2200;
// YouTube Data API, videos resource: a description of at most 5000 bytes, without `<` or `>`.
const YOUTUBE_DESCRIPTION_MAX_BYTES = 5000;
const YOUTUBE_TAGS_MAX = 500;

function exactlyOneVideo(item: ItemFacts, network: string): ErrorDetail[] {
  if (!item.media) return [];
  if (item.media.length === 1 && item.media[0]?.kind === 'video') return [];
  return [
    {
      path: item.paths.mediaIds,
      message: `A ${network} post needs exactly one video (channel ${item.channelId}); it has ${describeMedia(item.media)}.`,
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

/**
 * YouTube counts the tags together, with a comma between two tags, and a tag that contains a space
 * as if it were wrapped in quotation marks (YouTube Data API, `snippet.tags`).
 */
export function youtubeTagsLength(tags: string[]): number {
  const commas = Math.max(0, tags.length - 1);
  return tags.reduce((sum, tag) => sum + tag.length + (tag.includes(' ') ? 2 : 0), commas);
}

export function youtubeProblems(item: ItemFacts, settings: YouTubeSettings, settingsPath: string): ErrorDetail[] {
  const problems = exactlyOneVideo(item, 'YouTube');
  const tagsLength = youtubeTagsLength(settings.tags ?? []);
  if (tagsLength > YOUTUBE_TAGS_MAX) {
    problems.push({
      path: `${settingsPath}.tags`,
      message: `YouTube allows ${YOUTUBE_TAGS_MAX} characters of tags (channel ${item.channelId}); these count ${tagsLength}, with commas between tags and quotes around tags that contain spaces.`,
    });
  }
  if (settings.description === undefined) {
    // Without settings.description the content becomes the video's description, under YouTube's rules.
    const bytes = Buffer.byteLength(item.content, 'utf8');
    if (bytes > YOUTUBE_DESCRIPTION_MAX_BYTES || /[<>]/.test(item.content)) {
      problems.push({
        path: item.paths.content,
        message: `The content becomes the YouTube description (channel ${item.channelId}), which allows ${YOUTUBE_DESCRIPTION_MAX_BYTES} bytes without < or >; this has ${bytes} bytes${/[<>]/.test(item.content) ? ' and < or >' : ''}. Shorten it or set settings.description.`,
      });
    }
  } else if (Buffer.byteLength(settings.description, 'utf8') > YOUTUBE_DESCRIPTION_MAX_BYTES) {
    problems.push({
      path: `${settingsPath}.description`,
      message: `YouTube allows ${YOUTUBE_DESCRIPTION_MAX_BYTES} bytes of description (channel ${item.channelId}); this has ${Buffer.byteLength(settings.description, 'utf8')}.`,
    });
  }
  return problems;
}

export function tiktokProblems(item: ItemFacts, settings: TikTokSettings, settingsPath: string): ErrorDetail[] {
  const problems = exactlyOneVideo(item, 'TikTok');
  if (item.content.length > TIKTOK_CAPTION_MAX) {
    problems.push({
      path: item.paths.content,
      message: `TikTok allows a caption of ${TIKTOK_CAPTION_MAX} characters (channel ${item.channelId}); this one has ${item.content.length}.`,
    });
  }
  // TikTok's content-sharing rules: a paid partnership must be visible to others, so it cannot be private.
  if (settings.brandContentToggle === true && settings.privacyLevel === 'SELF_ONLY') {
    problems.push({
      path: `${settingsPath}.brandContentToggle`,
      message: `TikTok does not allow branded content (a paid partnership) to be private (channel ${item.channelId}); choose another privacyLevel or turn brandContentToggle off.`,
    });
  }
  return problems;
}

const INTERACTIONS = [
  { setting: 'disableComment', disabledBy: 'commentDisabled', name: 'comments' },
  { setting: 'disableDuet', disabledBy: 'duetDisabled', name: 'duets' },
  { setting: 'disableStitch', disabledBy: 'stitchDisabled', name: 'stitches' },
] as const;

/** What the TikTok account allows right now, checked against the user's choices. */
export function tiktokCreatorProblems(
  item: ItemFacts,
  settings: TikTokSettings,
  settingsPath: string,
  info: TikTokCreatorInfo,
): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  if (!info.canPost) {
    problems.push({
      path: item.paths.channel,
      message: `The TikTok account of channel ${item.channelId} cannot post now: ${info.cannotPostReason ?? 'TikTok gave no reason'}.`,
    });
  }
  if (!info.privacyLevelOptions.includes(settings.privacyLevel)) {
    problems.push({
      path: `${settingsPath}.privacyLevel`,
      message: `The TikTok account of channel ${item.channelId} allows ${info.privacyLevelOptions.join(', ') || 'no privacy level'}; not ${settings.privacyLevel}.`,
    });
  }
  for (const interaction of INTERACTIONS) {
    if (info[interaction.disabledBy] && settings[interaction.setting] !== true) {
      problems.push({
        path: `${settingsPath}.${interaction.setting}`,
        message: `The creator of channel ${item.channelId} turned ${interaction.name} off in TikTok; send ${interaction.setting}: true.`,
      });
    }
  }
  return problems;
}
