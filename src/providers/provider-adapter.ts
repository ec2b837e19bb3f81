import type { Clock } from '../core/clock.js';
import type { Metrics } from '../core/metrics.js';
import type { components } from '../../generated/public-v1.js';
import type { Channel } from '../channels/tables.js';
import type { Config } from '../core/config.js';
import type { Provider } from '../core/contract.js';
import type { ErrorDetail } from '../core/errors.js';
import type { Keyring } from '../crypto/keyring.js';
import type { Db } from '../db/database.js';
import type { Media } from '../media/tables.js';
import type { OutboundClient } from '../net/outbound-client.js';
import type { PublishingAdapter } from './publishing-contract.js';
import type { ConnectionAdapter } from './connection-contract.js';

/** A post's settings for the network `P`: the variant of the contract's `ProviderSettings` with `__type: P`. */
export type SettingsOf<P extends Provider> = Extract<components['schemas']['ProviderSettings'], { __type: P }>;
/** A network's settings as stored and answered: every optional choice filled in with its default. */
export type StoredSettingsOf<P extends Provider> = Extract<
  components['schemas']['StoredProviderSettings'],
  { __type: P }
>;

/** What a network's creator info says an account allows right now (TikTok's creator info). */
export type CreatorInfo = Omit<components['schemas']['TikTokCreatorInfo'], 'channelId'>;

/**
 * Reads an account's creator info from its network. An implementation throws `ProviderError` when
 * the network cannot be reached or answers with an error, and `UnprocessableError` when the account
 * cannot be asked (e.g. it needs to be connected again).
 */
export interface CreatorInfoSource {
  creatorInfo(channel: Channel): Promise<CreatorInfo>;
}

/** An account's totals and one page of its recent videos, with the network's own cursor of the next page. */
export interface AnalyticsPage {
  account: components['schemas']['TikTokAnalytics']['account'];
  videos: components['schemas']['TikTokVideo'][];
  /** The network's cursor of the next page of videos in the period, or `null` at its end. */
  next: string | null;
}

/**
 * Reads an account's analytics from its network: `ProviderError` when the network fails,
 * `UnprocessableError` for the account.
 */
export interface AnalyticsSource {
  analytics(
    channel: Channel,
    request: { since: Date; limit: number; cursor: string | undefined },
  ): Promise<AnalyticsPage>;
}

/** A board of a Pinterest account, with its sections (what a pin's settings name). */
export type PinterestBoard = components['schemas']['PinterestBoard'];

/**
 * Reads one page of an account's boards from its network, each with its sections: `ProviderError`
 * when the network fails, `UnprocessableError` for the account.
 */
export interface BoardsSource {
  boards(
    channel: Channel,
    page: { limit: number; bookmark: string | undefined },
  ): Promise<{ boards: PinterestBoard[]; next: string | null }>;
}

/** Where the parts of one post sit in the request, so each problem names its field. */
export interface ItemPaths {
  channel: string;
  content: string;
  mediaIds: string;
  /** `undefined` in the single-content form, which carries no settings. */
  settings: string | undefined;
  altTexts: string;
  /** `undefined` in the single-content form, which carries no thread. */
  thread: string | undefined;
  /** `undefined` in the single-content form, which carries no first comment. */
  firstComment: string | undefined;
}

/** A network's rules for threads. Each part also follows the network's rules for a post's text and media. */
export interface ThreadRules {
  /** The most parts a thread may have, the post's own content included. */
  maxParts: number;
  /**
   * The problems of one part after the first by the network's rules for a post's text and media
   * (the post's own part is checked with its settings, by `settingsProblems`).
   */
  partProblems(part: ItemFacts): ErrorDetail[];
}

/**
 * What the rules know of one media: its kind, its type as sniffed from its bytes, its size in bytes
 * (the stored column's text, see `mediaBytes`), a video's length when its container states it, and an
 * image's width and height when its header states them (read once, when it is stored; media stored
 * before that was done has none, and its shape is then left to the network), and a document's pages.
 */
export type MediaFacts = Pick<
  Media,
  'id' | 'kind' | 'content_type' | 'size' | 'duration_ms' | 'width' | 'height' | 'page_count'
>;

/** A media's size in bytes. */
export const mediaBytes = (media: Pick<MediaFacts, 'size'>): number => Number(media.size);

/**
 * What the rules need to know about one post. `media` is `undefined` when some media id is unknown
 * (reported already); otherwise in the order of `mediaIds`, so `paths.mediaIds[i]` names `media[i]`.
 */
export interface ItemFacts {
  channelId: string;
  content: string;
  media: MediaFacts[] | undefined;
  paths: ItemPaths;
  /** Whether the post carries a first comment (a thread's part never does). */
  hasFirstComment?: boolean;
  /** Whether the post gives any of its media an alternative text. */
  hasAltTexts?: boolean;
}

/**
 * How long a post's text may be on a network, as its rules count it, for a page to count along while
 * the user writes; the rules themselves (`settingsProblems`) refuse what goes beyond.
 */
export interface ContentLimit {
  max: number;
  /**
   * `characters` in UTF-16 code units (JavaScript's `length`), `bytes` of UTF-8, `graphemes` (what a
   * reader sees as one character), or `weighted` as X weighs them (see `count`).
   */
  unit: 'characters' | 'bytes' | 'graphemes' | 'weighted';
  /** What the text becomes there, e.g. "caption". */
  becomes: string;
  /** How the network counts a text against `max`, where that is not simply by `unit`. */
  count?: (text: string) => number;
}

/** One post's settings to check against its network's rules. */
export interface SettingsCheck<P extends Provider> {
  item: ItemFacts;
  channel: Channel;
  settings: SettingsOf<P>;
  /** Where the settings are in the request (`posts[0].settings`). */
  path: string;
  /** Every media id of the post, its thread's parts' included: what settings by media may name. */
  mediaIds: string[];
  /** The account's creator info, read at most once per channel and request; absent when the network has none. */
  creatorInfo: ((channel: Channel) => Promise<CreatorInfo>) | undefined;
}

/**
 * Everything the service knows of one social network, in the network's own folder: its name, the
 * rules its settings follow that the contract cannot express, and what the operator's configuration
 * makes available: connecting accounts, publishing, and, where the network has them, creator info.
 * A capability left out is one the operator has not configured (no app at that network).
 */
export interface ProviderAdapter<P extends Provider = Provider> {
  readonly provider: P;
  /** The network's name, as messages and pages show it. */
  readonly name: string;
  /** Whether its accounts are connected through the network's consent page (the sandbox is simply added). */
  readonly connectsAccounts: boolean;
  /** Whether a post to this network needs settings (`__type` of its network). */
  readonly needsSettings: boolean;
  /** The network's own limit of a post's text, when it has one below the contract's. */
  readonly contentLimit?: ContentLimit;
  /**
   * The limit of a post's text on one channel, where the account's own server sets it (a Mastodon
   * instance's): what the rules check that channel's posts by. Absent: `contentLimit` for every channel.
   */
  channelContentLimit?(channel: Channel): Promise<ContentLimit>;
  /** How the network takes a first comment (the account's own, on the post); absent on a network without comments. */
  readonly firstComment?: { maxLength: number };
  /** How the network takes threads (parts published as replies); absent on a network without replies. */
  readonly thread?: ThreadRules;
  /**
   * Whether the network publishes documents (PDF) as posts of their own (LinkedIn's document posts); a
   * network without them is refused every document at create, and its rules never see one.
   */
  readonly takesDocuments?: boolean;
  /** The longest alternative text of an image the network takes; absent on a network without any. */
  readonly altTextMax?: number;
  /** The longest alternative text of a video in graphemes, where the network takes less than `altTextMax` for one. */
  readonly videoAltTextMax?: number;
  /** The problems of one post's settings, every one of them, with the path of the field concerned. */
  settingsProblems(check: SettingsCheck<P>): Promise<ErrorDetail[]>;
  /** The settings as stored and answered: every optional choice with its documented default. */
  withDefaults(settings: SettingsOf<P>): StoredSettingsOf<P>;
  readonly connection?: ConnectionAdapter;
  readonly publishing?: PublishingAdapter;
  readonly creatorInfo?: CreatorInfoSource;
  readonly analytics?: AnalyticsSource;
  /** A Pinterest account's boards and their sections. */
  readonly boards?: BoardsSource;
}

/** The adapters of every network the service knows, by provider. */
export type Providers = { readonly [P in Provider]: ProviderAdapter<P> };

/** What the networks' adapters are built from. */
export interface ProviderDependencies {
  config: Config;
  outbound: OutboundClient;
  /** The key sandbox channels' requests are signed with. */
  sandboxKey: Buffer;
  clock: Clock;
  db: Db;
  keyring: Keyring;
  /** Counts what the metrics show of the networks (refused token refreshes). */
  metrics: Metrics;
}

/** One network's folder exports one of these: it builds the network's adapter from the configuration. */
export type ProviderFactory<P extends Provider> = (deps: ProviderDependencies) => ProviderAdapter<P>;
