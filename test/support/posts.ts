import type { Channel } from '../../src/channels/tables.js';
import { ProviderError } from '../../src/core/errors.js';
import type {
  CreatorInfo as TikTokCreatorInfo,
  CreatorInfoSource as TikTokCreatorInfoSource,
} from '../../src/providers/provider-adapter.js';

export const OPEN_CREATOR: TikTokCreatorInfo = {
  canPost: true,
  cannotPostReason: null,
  creatorNickname: 'Acme Studio',
  creatorUsername: 'acmestudio',
  creatorAvatarUrl: null,
  privacyLevelOptions: ['PUBLIC_TO_EVERYONE', 'MUTUAL_FOLLOW_FRIENDS', 'SELF_ONLY'],
  commentDisabled: false,
  duetDisabled: false,
  stitchDisabled: false,
  maxVideoPostDurationSec: 600,
};

/**
 * Stands in for TikTok behind the adapter interface: answers the creator info set per channel
 * (`OPEN_CREATOR` by default), or fails like an unreachable TikTok.
 */
export class FakeTikTok implements TikTokCreatorInfoSource {
  private readonly infos = new Map<string, TikTokCreatorInfo>();
  private readonly unreachable = new Set<string>();
  readonly reads: string[] = [];

  set(channelId: string, info: Partial<TikTokCreatorInfo>): void {
    this.infos.set(channelId, { ...OPEN_CREATOR, ...info });
  }

  failFor(channelId: string): void {
    this.unreachable.add(channelId);
  }

  creatorInfo(channel: Channel): Promise<TikTokCreatorInfo> {
    this.reads.push(channel.id);
    if (this.unreachable.has(channel.id)) {
      return Promise.reject(
        new ProviderError('TikTok did not answer the creator info request in time; try again in a moment.'),
      );
    }
    return Promise.resolve(this.infos.get(channel.id) ?? OPEN_CREATOR);
  }
}

/** Every test file runs many requests under a frozen clock, all in one rate-limit window. */
export const POSTS_TEST_ENV = { RATE_LIMIT_MAX: '1000000' };

type Sender = { fetch(path: string, init?: RequestInit): Promise<Response> };

/** Sends a JSON request as the organization. */
export function send(
  server: Sender,
  auth: { Authorization: string },
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return server.fetch(path, {
    method,
    headers: { ...auth, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}
