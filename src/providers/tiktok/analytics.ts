import type { Clock } from '../../core/clock.js';
import type { Channel } from '../../channels/tables.js';
import { markNeedsReconnect } from '../../channels/channels.js';
import { ProviderError, UnprocessableError } from '../../core/errors.js';
import type { Db } from '../../db/database.js';
import { ReconnectNeededError } from '../publishing-contract.js';
import { TokenRefreshFailedError } from '../account-tokens.js';
import type { AnalyticsPage, AnalyticsSource } from '../provider-adapter.js';
import { TikTokError, TikTokUnreachableError, type TikTokApi } from './api.js';
import type { TikTokTokens } from './tokens.js';

const VIDEO_FIELDS = [
  'id',
  'title',
  'video_description',
  'create_time',
  'duration',
  'cover_image_url',
  'share_url',
  'like_count',
  'comment_count',
  'share_count',
  'view_count',
].join(',');

interface UserAnswer {
  user?: { follower_count?: number; following_count?: number; likes_count?: number; video_count?: number };
}

interface VideoListAnswer {
  videos?: {
    id?: string;
    title?: string;
    video_description?: string;
    create_time?: number;
    duration?: number;
    cover_image_url?: string;
    share_url?: string;
    like_count?: number;
    comment_count?: number;
    share_count?: number;
    view_count?: number;
  }[];
  cursor?: number;
  has_more?: boolean;
}

const count = (value: number | undefined) => Math.max(0, Math.floor(value ?? 0));

/**
 * A TikTok account's analytics (Display API): its totals from `user/info` (`user.info.stats`) and its
 * videos from `video/list` (`video.list`), newest first, down to the start of the period. TikTok's
 * own cursor (the creation time, in milliseconds, of the last video it gave) carries over to the
 * next page.
 */
export class TikTokAnalytics implements AnalyticsSource {
  constructor(
    private readonly api: TikTokApi,
    private readonly tokens: TikTokTokens,
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  async analytics(
    channel: Channel,
    request: { since: Date; limit: number; cursor: string | undefined },
  ): Promise<AnalyticsPage> {
    try {
      const call = <T>(path: string, body?: unknown) =>
        this.tokens.authorized(channel, (accessToken) =>
          this.api.call<T>(path, body === undefined ? { accessToken, method: 'GET' } : { accessToken, body }),
        );
      const [user, list] = await Promise.all([
        call<UserAnswer>('/v2/user/info/?fields=follower_count,following_count,likes_count,video_count'),
        call<VideoListAnswer>(`/v2/video/list/?fields=${VIDEO_FIELDS}`, {
          max_count: request.limit,
          ...(request.cursor ? { cursor: Number(request.cursor) } : {}),
        }),
      ]);
      const since = request.since.getTime() / 1000;
      const all = list.data.videos ?? [];
      const videos = all.filter((video) => (video.create_time ?? 0) >= since && video.id && video.share_url);
      // TikTok lists newest first: once a video is older than the period, so is every later one.
      const more =
        list.data.has_more === true && all.length > 0 && videos.length === all.length && list.data.cursor !== undefined;
      return {
        account: toAccount(user.data.user ?? {}),
        videos: videos.map(toVideo),
        next: more ? String(list.data.cursor) : null,
      };
    } catch (error) {
      if (error instanceof ReconnectNeededError) {
        await markNeedsReconnect(this.db, channel.id, this.clock.now());
        throw new UnprocessableError(
          `Channel ${channel.id} needs to be connected again: TikTok refused its credentials (${error.message}).`,
        );
      }
      throw refusalOf(error);
    }
  }
}

type Video = NonNullable<VideoListAnswer['videos']>[number];

function toAccount(stats: NonNullable<UserAnswer['user']>): AnalyticsPage['account'] {
  return {
    followerCount: count(stats.follower_count),
    followingCount: count(stats.following_count),
    likesCount: count(stats.likes_count),
    videoCount: count(stats.video_count),
  };
}

/** A video as the page shows it; only videos with an id and a share URL get here. */
function toVideo(video: Video): AnalyticsPage['videos'][number] {
  return {
    id: video.id!,
    title: video.title || video.video_description || '',
    createdAt: new Date(video.create_time! * 1000).toISOString(),
    durationSec: count(video.duration),
    viewCount: count(video.view_count),
    likeCount: count(video.like_count),
    commentCount: count(video.comment_count),
    shareCount: count(video.share_count),
    shareUrl: video.share_url!,
    coverImageUrl: video.cover_image_url || null,
  };
}

/** TikTok's refusal or silence as the API's 502; anything else as it is. */
function refusalOf(error: unknown): unknown {
  if (error instanceof TikTokError) {
    const why =
      error.code === 'rate_limit_exceeded'
        ? 'its rate limit for the account is reached; try again in a minute'
        : `${error.code}: ${error.message}`;
    return new ProviderError(
      `TikTok refused the analytics request (${why}${error.logId ? `, log_id ${error.logId}` : ''}).`,
    );
  }
  if (error instanceof TikTokUnreachableError) return new ProviderError(`${error.message}; try again in a moment.`);
  if (error instanceof TokenRefreshFailedError)
    return new ProviderError(`TikTok's access token could not be refreshed (${error.message}); try again in a moment.`);
  return error;
}
