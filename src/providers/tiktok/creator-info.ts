import type { Clock } from '../../core/clock.js';
import type { Channel } from '../../channels/tables.js';
import { markNeedsReconnect } from '../../channels/channels.js';
import type { components } from '../../../generated/public-v1.js';
import { ProviderError, UnprocessableError } from '../../core/errors.js';
import type { Db } from '../../db/database.js';
import { ReconnectNeededError } from '../publishing-contract.js';
import { TokenRefreshFailedError } from '../account-tokens.js';
import type { CreatorInfo, CreatorInfoSource } from '../provider-adapter.js';
import { TikTokError, TikTokUnreachableError, type TikTokApi } from './api.js';
import type { TikTokTokens } from './tokens.js';

type PrivacyLevel = components['schemas']['TikTokPrivacyLevel'];

/** TikTok allows 20 creator-info queries a minute per account; an answer is reused for this long. */
const CACHE_MS = 30_000;

interface CreatorInfoAnswer {
  creator_avatar_url?: string;
  creator_username?: string;
  creator_nickname?: string;
  privacy_level_options?: string[];
  comment_disabled?: boolean;
  duet_disabled?: boolean;
  stitch_disabled?: boolean;
  max_video_post_duration_sec?: number;
}

/** TikTok's refusals that mean the account cannot post now, in words for the user. */
const CANNOT_POST: Record<string, string> = {
  spam_risk_too_many_posts: 'the account reached the number of posts TikTok allows it in a day; try again tomorrow',
  spam_risk_user_banned_from_posting: 'TikTok does not let this account post at the moment',
  reached_active_user_cap:
    'the app reached the number of TikTok accounts that may post through it today; try again tomorrow',
};

const PRIVACY_LEVELS: readonly string[] = [
  'PUBLIC_TO_EVERYONE',
  'MUTUAL_FOLLOW_FRIENDS',
  'FOLLOWER_OF_CREATOR',
  'SELF_ONLY',
];

/**
 * A TikTok account's creator info (`post/publish/creator_info/query`), which TikTok requires to be
 * read before every direct post: whether it can post now, the privacy levels and interactions the
 * creator allows, and the longest video. Answers are kept per channel for a short while. An account
 * whose token TikTok refuses is marked `needs_reconnect`.
 */
export class TikTokCreatorInfo implements CreatorInfoSource {
  private readonly cache = new Map<string, { info: CreatorInfo; until: number }>();

  constructor(
    private readonly api: TikTokApi,
    private readonly tokens: TikTokTokens,
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  async creatorInfo(channel: Channel): Promise<CreatorInfo> {
    const cached = this.cache.get(channel.id);
    if (cached && cached.until > this.clock.now().getTime()) return cached.info;
    const info = await this.query(channel);
    this.cache.set(channel.id, { info, until: this.clock.now().getTime() + CACHE_MS });
    if (this.cache.size > 10_000) this.cache.delete(this.cache.keys().next().value!);
    return info;
  }

  /** Drops what is kept of a channel's creator info: the next read asks TikTok. */
  forget(channelId: string): void {
    this.cache.delete(channelId);
  }

  private async query(channel: Channel): Promise<CreatorInfo> {
    try {
      const { data } = await this.tokens.authorized(channel, (accessToken) =>
        this.api.call<CreatorInfoAnswer>('/v2/post/publish/creator_info/query/', { accessToken }),
      );
      return creatorInfoOf(data, channel);
    } catch (error) {
      if (error instanceof TikTokError && error.code in CANNOT_POST) return cannotPost(error.code, channel);
      throw await this.failureOf(channel, error);
    }
  }

  /**
   * What a failed query means to the caller: 422 for an account whose token TikTok refuses (marked
   * `needs_reconnect`), 502 when TikTok refuses or cannot be reached.
   */
  private async failureOf(channel: Channel, error: unknown): Promise<unknown> {
    if (error instanceof ReconnectNeededError) {
      await markNeedsReconnect(this.db, channel.id, this.clock.now());
      // The refusal stays the cause: the publisher logs TikTok's log_id from it.
      return new UnprocessableError(
        `Channel ${channel.id} needs to be connected again: TikTok refused its credentials (${error.message}).`,
        undefined,
        { cause: error },
      );
    }
    if (error instanceof TikTokError && error.code === 'rate_limit_exceeded') {
      return new ProviderError(
        'TikTok allows 20 creator-info requests a minute per account, and this one is used up; ' +
          'try again in a minute.',
      );
    }
    if (error instanceof TikTokError) {
      return new ProviderError(
        'TikTok refused the creator info request ' +
          `(${error.code}: ${error.message}${error.logId ? `, log_id ${error.logId}` : ''}).`,
      );
    }
    if (error instanceof TikTokUnreachableError) return new ProviderError(`${error.message}; try again in a moment.`);
    if (error instanceof TokenRefreshFailedError)
      return new ProviderError(
        `TikTok's access token could not be refreshed (${error.message}); try again in a moment.`,
      );
    return error;
  }
}

/** TikTok's answer, with the channel's own names where TikTok gives none. */
function creatorInfoOf(data: CreatorInfoAnswer, channel: Channel): CreatorInfo {
  return {
    canPost: true,
    cannotPostReason: null,
    creatorNickname: data.creator_nickname ?? channel.name,
    creatorUsername: data.creator_username ?? channel.username ?? '',
    creatorAvatarUrl: data.creator_avatar_url || null,
    privacyLevelOptions: (data.privacy_level_options ?? []).filter((level): level is PrivacyLevel =>
      PRIVACY_LEVELS.includes(level),
    ),
    commentDisabled: data.comment_disabled === true,
    duetDisabled: data.duet_disabled === true,
    stitchDisabled: data.stitch_disabled === true,
    maxVideoPostDurationSec: Math.max(0, Math.floor(data.max_video_post_duration_sec ?? 0)),
  };
}

/** The creator info of an account TikTok does not let post now (`code`, one of CANNOT_POST). */
function cannotPost(code: string, channel: Channel): CreatorInfo {
  return {
    canPost: false,
    cannotPostReason: `${CANNOT_POST[code]} (TikTok: ${code})`,
    creatorNickname: channel.name,
    creatorUsername: channel.username ?? '',
    creatorAvatarUrl: null,
    privacyLevelOptions: [],
    commentDisabled: false,
    duetDisabled: false,
    stitchDisabled: false,
    maxVideoPostDurationSec: 0,
  };
}
