import type { components } from '../../generated/public-v1.js';
import type { Channel } from '../channels/tables.js';
import { UnprocessableError } from '../core/errors.js';

/** What a TikTok account allows right now, as TikTok's creator info endpoint reports it. */
export type TikTokCreatorInfo = Omit<components['schemas']['TikTokCreatorInfo'], 'channelId'>;

/**
 * Reads a TikTok channel's creator info. TikTok requires it to be checked before every direct post:
 * the account may be unable to post (a daily cap of TikTok's own), and the creator chooses which
 * privacy levels and interactions are allowed. An implementation throws `ProviderError` when TikTok
 * cannot be reached or answers with an error.
 */
export interface TikTokCreatorInfoSource {
  creatorInfo(channel: Channel): Promise<TikTokCreatorInfo>;
}

/** The source of a server that has no TikTok app configured: every TikTok item is refused. */
export const tiktokNotConfigured: TikTokCreatorInfoSource = {
  async creatorInfo() {
    throw new UnprocessableError(
      'TikTok publishing is not configured on this server, so TikTok posts cannot be accepted; ask its operator.',
    );
  },
};
