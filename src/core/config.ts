import { readBluesky, type BlueskyConfig } from './config/bluesky.js';
import { readDatabase, type DatabaseSettings } from './config/database.js';
import { EnvReader, type Env } from './config/env-reader.js';
import { readLimits, type LimitSettings } from './config/limits.js';
import { readLinkedIn, type LinkedInConfig } from './config/linkedin.js';
import { readMastodon, type MastodonConfig } from './config/mastodon.js';
import {
  readInstagramLogin,
  readMeta,
  readThreads,
  type InstagramLoginConfig,
  type MetaConfig,
  type ThreadsConfig,
} from './config/meta.js';
import { readMail, type MailConfig } from './config/mail.js';
import { readMedia, type MediaConfig } from './config/media.js';
import { readMetrics, type MetricsConfig } from './config/metrics.js';
import { readPinterest, type PinterestConfig } from './config/pinterest.js';
import { readPublisher, type PublisherConfig } from './config/publisher.js';
import { readRecurring, type RecurringConfig } from './config/recurring.js';
import { readRetention, type RetentionSettings } from './config/retention.js';
import { readRuntime, type RuntimeSettings } from './config/runtime.js';
import { readSandbox, type SandboxConfig } from './config/sandbox.js';
import { readServer, type ServerSettings } from './config/server.js';
import { readTikTok, type TikTokConfig } from './config/tiktok.js';
import { readTracing, type TracingConfig } from './config/tracing.js';
import { readWebhooks, type WebhooksConfig } from './config/webhooks.js';
import { readX, type XConfig } from './config/x.js';
import { readYouTube, type YouTubeConfig } from './config/youtube.js';

export type { BlueskyConfig } from './config/bluesky.js';
export type { LinkedInConfig } from './config/linkedin.js';
export type { MastodonConfig } from './config/mastodon.js';
export type { InstagramLoginConfig, MetaConfig, ThreadsConfig } from './config/meta.js';
export type { MailConfig } from './config/mail.js';
export type { MediaConfig, S3StorageConfig } from './config/media.js';
export type { PinterestConfig } from './config/pinterest.js';
export type { TikTokConfig } from './config/tiktok.js';
export type { TracingConfig } from './config/tracing.js';
export type { XConfig } from './config/x.js';
export type { YouTubeConfig } from './config/youtube.js';

/**
 * The service's configuration, read from the environment once at start-up. Each section is read by
 * its module in src/core/config/; nothing else in the code reads `process.env`.
 */
export interface Config extends ServerSettings, DatabaseSettings, RuntimeSettings, LimitSettings {
  media: MediaConfig;
  /** Set when YOUTUBE_CLIENT_ID and YOUTUBE_CLIENT_SECRET are; without it YouTube is not offered. */
  youtube: YouTubeConfig | undefined;
  /** Set when TIKTOK_CLIENT_KEY and TIKTOK_CLIENT_SECRET are; without it TikTok is not offered. */
  tiktok: TikTokConfig | undefined;
  /** Unless BLUESKY_ENABLED is false: users connect Bluesky accounts with app passwords. */
  bluesky: BlueskyConfig | undefined;
  /** Unless MASTODON_ENABLED is false: users connect accounts of any Mastodon instance. */
  mastodon: MastodonConfig | undefined;
  /** Set when X_CLIENT_ID and X_CLIENT_SECRET are; without it X is not offered. */
  x: XConfig | undefined;
  /** Set when META_APP_ID and META_APP_SECRET are: Facebook Pages and their Instagram accounts. */
  meta: MetaConfig | undefined;
  /** Set when THREADS_APP_ID and THREADS_APP_SECRET are. */
  threads: ThreadsConfig | undefined;
  /** Set when INSTAGRAM_APP_ID and INSTAGRAM_APP_SECRET are: Instagram accounts without a Facebook Page. */
  instagramLogin: InstagramLoginConfig | undefined;
  /** Set when LINKEDIN_CLIENT_ID and LINKEDIN_CLIENT_SECRET are: members and the company pages they administer. */
  linkedin: LinkedInConfig | undefined;
  /** Set when PINTEREST_APP_ID and PINTEREST_APP_SECRET are; without it Pinterest is not offered. */
  pinterest: PinterestConfig | undefined;
  sandbox: SandboxConfig;
  publisher: PublisherConfig;
  webhooks: WebhooksConfig;
  /** Mail to people; without SMTP_URL it is logged instead of sent. */
  mail: MailConfig;
  metrics: MetricsConfig;
  /** Set when OpenTelemetry traces are to be sent (see TracingConfig); off by default. */
  tracing: TracingConfig | undefined;
  /** How long finished jobs and settled webhook deliveries are kept. */
  retention: RetentionSettings;
  recurring: RecurringConfig;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Reads every section, and throws one ConfigError that lists every invalid value. */
export function loadConfig(env: Env = process.env): Config {
  const read = new EnvReader(env);
  const server = readServer(read);
  const database = readDatabase(read);
  const config: Config = {
    ...server,
    ...database,
    ...readRuntime(read, database),
    ...readLimits(read),
    media: readMedia(read),
    youtube: readYouTube(read),
    tiktok: readTikTok(read),
    bluesky: readBluesky(read),
    mastodon: readMastodon(read),
    x: readX(read),
    meta: readMeta(read),
    threads: readThreads(read),
    instagramLogin: readInstagramLogin(read),
    linkedin: readLinkedIn(read),
    pinterest: readPinterest(read),
    sandbox: readSandbox(read, server.publicUrl),
    publisher: readPublisher(read),
    webhooks: readWebhooks(read),
    mail: readMail(read, server.publicUrl),
    metrics: readMetrics(read),
    tracing: readTracing(read),
    retention: readRetention(read),
    recurring: readRecurring(read),
  };
  if (read.problems.length > 0) {
    throw new ConfigError(`Invalid configuration:\n  - ${read.problems.join('\n  - ')}`);
  }
  return config;
}
