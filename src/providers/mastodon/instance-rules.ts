import type { Channel } from '../../channels/tables.js';
import type { ErrorDetail } from '../../core/errors.js';
import type { Keyring } from '../../crypto/keyring.js';
import { channelCredentials } from '../account-credentials.js';
import type { ItemFacts, SettingsCheck } from '../provider-adapter.js';
import { graphemeCount, textPostProblems, type TextNetworkLimits } from '../text-rules.js';
import { mastodonCredentials } from './connection.js';
import type { InstanceLimits, MastodonInstances } from './instance.js';
import { focusProblems, MASTODON_LIMITS, mastodonRules } from './rules.js';

/** Channels whose instance's rules are kept for their thread's parts; beyond it the oldest are dropped. */
const REMEMBERED_CHANNELS = 10_000;

/**
 * Mastodon's rules with the limits of the channel's own instance (`/api/v2/instance`): its character
 * limit, the content warning counted with the text, every URL as the instance counts it, its number
 * of media, their types and sizes (see `mastodonRules`). A channel whose instance cannot be asked (or
 * that holds no account) gets Mastodon's defaults.
 */
export class MastodonInstanceRules {
  /** The rules last read for each channel, for the parts of its thread (see `partProblems`). */
  private readonly byChannel = new Map<string, TextNetworkLimits>();

  constructor(
    private readonly instances: MastodonInstances,
    private readonly keyring: Keyring,
  ) {}

  /** The channel's instance's limit of a status, as that instance counts it (a page counts along by it). */
  async contentLimit(channel: Channel): Promise<TextNetworkLimits['content']> {
    return mastodonRules(await this.limitsOf(channel)).content;
  }

  async settingsProblems(check: SettingsCheck<'mastodon'>): Promise<ErrorDetail[]> {
    const { item, channel, settings } = check;
    // Every status of the post carries the content warning: it counts toward each part's limit.
    const rules = mastodonRules(await this.limitsOf(channel), graphemeCount(settings.spoilerText ?? ''));
    this.byChannel.delete(channel.id);
    if (this.byChannel.size >= REMEMBERED_CHANNELS) this.byChannel.delete(this.byChannel.keys().next().value!);
    this.byChannel.set(channel.id, rules);
    return [...textPostProblems(item, rules), ...focusProblems(check)];
  }

  /**
   * A thread's part after the first, by the rules the post's own part was just checked with: a post's
   * settings are checked before its thread (posts/validation.ts), which is checked synchronously.
   */
  partProblems(part: ItemFacts): ErrorDetail[] {
    return textPostProblems(part, this.byChannel.get(part.channelId) ?? MASTODON_LIMITS);
  }

  private async limitsOf(channel: Channel): Promise<InstanceLimits> {
    const credentials = channel.credentials ? channelCredentials(this.keyring, channel) : undefined;
    const account = credentials && mastodonCredentials(credentials);
    if (!account) return this.instances.defaults();
    return this.instances.limits(account.site);
  }
}
