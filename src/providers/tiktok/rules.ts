import { acceptsPosts } from '../../channels/channels.js';
import { UnprocessableError, type ErrorDetail } from '../../core/errors.js';
import type { ContentLimit, CreatorInfo, SettingsCheck } from '../provider-adapter.js';
import { exactlyOneVideo } from '../rules.js';

// TikTok counts the caption in UTF-16 code units, as JavaScript's `length` does.
const CAPTION_MAX = 2200;

export const TIKTOK_CONTENT_LIMIT: ContentLimit = { max: CAPTION_MAX, unit: 'characters', becomes: 'caption' };

const INTERACTIONS = [
  { setting: 'disableComment', disabledBy: 'commentDisabled', name: 'comments' },
  { setting: 'disableDuet', disabledBy: 'duetDisabled', name: 'duets' },
  { setting: 'disableStitch', disabledBy: 'stitchDisabled', name: 'stitches' },
] as const;

/**
 * A TikTok post: one video, a caption within TikTok's limit, TikTok's content-sharing rules, and the
 * choices the account allows right now according to its creator info (read only for a channel that
 * takes posts). A network that cannot be asked (TikTok not configured here) refuses the item; an
 * outage (`ProviderError`) is the whole request's, thrown as is.
 */
export async function tiktokProblems(check: SettingsCheck<'tiktok'>): Promise<ErrorDetail[]> {
  const { item, settings, path, channel } = check;
  const problems = exactlyOneVideo(item, 'TikTok');
  if (item.content.length > CAPTION_MAX) {
    problems.push({
      path: item.paths.content,
      message:
        `TikTok allows a caption of ${CAPTION_MAX} characters (channel ${item.channelId}); ` +
        `this one has ${item.content.length}.`,
    });
  }
  // TikTok's content-sharing rules: a paid partnership must be visible to others, so it cannot be private.
  if (settings.brandContentToggle === true && settings.privacyLevel === 'SELF_ONLY') {
    problems.push({
      path: `${path}.brandContentToggle`,
      message:
        `TikTok does not allow branded content (a paid partnership) to be private (channel ${item.channelId}); ` +
        'choose another privacyLevel or turn brandContentToggle off.',
    });
  }
  if (!acceptsPosts(channel)) return problems;
  if (!check.creatorInfo) {
    return [
      ...problems,
      {
        path: item.paths.channel,
        message:
          'TikTok publishing is not configured on this server, so TikTok posts cannot be accepted; ask its operator.',
      },
    ];
  }
  let info: CreatorInfo;
  try {
    info = await check.creatorInfo(channel);
  } catch (error) {
    if (error instanceof UnprocessableError) return [...problems, { path: item.paths.channel, message: error.message }];
    throw error;
  }
  return [...problems, ...creatorProblems(check, info)];
}

/** What the TikTok account allows right now, checked against the user's choices. */
function creatorProblems({ item, settings, path }: SettingsCheck<'tiktok'>, info: CreatorInfo): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  if (!info.canPost) {
    problems.push({
      path: item.paths.channel,
      message:
        `The TikTok account of channel ${item.channelId} cannot post now: ` +
        `${info.cannotPostReason ?? 'TikTok gave no reason'}.`,
    });
  }
  if (!info.privacyLevelOptions.includes(settings.privacyLevel)) {
    problems.push({
      path: `${path}.privacyLevel`,
      message:
        `The TikTok account of channel ${item.channelId} ` +
        `allows ${info.privacyLevelOptions.join(', ') || 'no privacy level'}; not ${settings.privacyLevel}.`,
    });
  }
  const video = item.media?.find((media) => media.kind === 'video');
  const longest = info.maxVideoPostDurationSec;
  if (video?.duration_ms != null && longest > 0 && video.duration_ms > longest * 1000) {
    problems.push({
      path: item.paths.mediaIds,
      message:
        `The TikTok account of channel ${item.channelId} may post videos of up to ${longest} seconds; ` +
        `this one lasts ${video.duration_ms / 1000} seconds.`,
    });
  }
  for (const interaction of INTERACTIONS) {
    if (info[interaction.disabledBy] && settings[interaction.setting] !== true) {
      problems.push({
        path: `${path}.${interaction.setting}`,
        message:
          `The creator of channel ${item.channelId} turned ${interaction.name} off in TikTok; ` +
          `send ${interaction.setting}: true.`,
      });
    }
  }
  return problems;
}
