import type { Provider } from '../contract.js';
import type { EnvReader } from './env-reader.js';

/** How much organizations, channels and client addresses may do in a window of time. */
export interface LimitSettings {
  rateLimit: {
    /** Requests an organization may make per window, across all its API keys and OAuth tokens. */
    max: number;
    windowSeconds: number;
  };
  /** Posts a channel may publish per UTC day, by provider. */
  dailyPostLimits: Record<Provider, number>;
  /**
   * Failed client authentications at the OAuth token and revocation endpoints allowed per window,
   * per client id from one address and per address; past either, requests from that address are
   * refused with 429 until the window ends.
   */
  oauthClientAuthFailures: {
    /** For one client id from one address (OAUTH_AUTH_FAILURES_PER_CLIENT). */
    perClientAddress: number;
    perAddress: number;
    windowSeconds: number;
  };
  /**
   * Days an OAuth refresh token stays usable without being used (OAUTH_REFRESH_TOKEN_IDLE_DAYS); each
   * refresh issues a successor with the full time again.
   */
  oauthRefreshTokenIdleDays: number;
  /**
   * OAuth clients that register themselves (RFC 7591) or are known by a metadata document: how many
   * registrations one address may make per window (past it, 429 until the window ends), how long a
   * client nobody approved is kept, and how long fetching a metadata document may take.
   */
  oauthClients: {
    registrationsPerAddress: number;
    registrationWindowSeconds: number;
    unusedClientDays: number;
    metadataFetchSeconds: number;
  };
  /**
   * Limits per client address on the web app's account forms, against password spraying across many
   * emails and floods of password hashing; past either, the form answers 429 until the window ends.
   */
  accountLimits: {
    /** Failed log-ins from one address per window, whatever the emails. */
    loginFailuresPerAddress: number;
    /** Sign-up attempts from one address per window (forms refused for invalid fields do not count). */
    signupsPerAddress: number;
    windowSeconds: number;
  };
  /**
   * Sign-ins that failed on this server's sign-in pages of the networks (Bluesky's app passwords) per
   * organization per window, across its connections: each connection gives up after a few, and starting
   * new ones must not give more guesses; past it, the page answers 429 until the window ends.
   */
  signInFailures: {
    perOrganization: number;
    windowSeconds: number;
  };
}

export function readLimits(read: EnvReader): LimitSettings {
  return {
    rateLimit: {
      max: read.integer('RATE_LIMIT_MAX', 300, 1, 1_000_000),
      windowSeconds: read.integer('RATE_LIMIT_WINDOW_SECONDS', 60, 1, 86_400),
    },
    dailyPostLimits: {
      youtube: read.integer('DAILY_POST_LIMIT_YOUTUBE', 6, 1, 10_000),
      tiktok: read.integer('DAILY_POST_LIMIT_TIKTOK', 15, 1, 10_000),
      sandbox: read.integer('DAILY_POST_LIMIT_SANDBOX', 100, 1, 10_000),
      bluesky: read.integer('DAILY_POST_LIMIT_BLUESKY', 50, 1, 10_000),
      mastodon: read.integer('DAILY_POST_LIMIT_MASTODON', 50, 1, 10_000),
      x: read.integer('DAILY_POST_LIMIT_X', 50, 1, 10_000),
      facebook: read.integer('DAILY_POST_LIMIT_FACEBOOK', 50, 1, 10_000),
      // Instagram's own cap: 50 published posts per account in 24 hours.
      instagram: read.integer('DAILY_POST_LIMIT_INSTAGRAM', 50, 1, 10_000),
      // Threads's own cap: 250 posts per account in 24 hours.
      threads: read.integer('DAILY_POST_LIMIT_THREADS', 250, 1, 10_000),
      // LinkedIn's own cap: 150 posts per member in a day (its Share on LinkedIn rate limits).
      linkedin: read.integer('DAILY_POST_LIMIT_LINKEDIN', 150, 1, 10_000),
      pinterest: read.integer('DAILY_POST_LIMIT_PINTEREST', 50, 1, 10_000),
    },
    oauthClientAuthFailures: {
      perClientAddress: read.integer('OAUTH_AUTH_FAILURES_PER_CLIENT', 10, 1, 1_000_000),
      perAddress: read.integer('OAUTH_AUTH_FAILURES_PER_ADDRESS', 50, 1, 1_000_000),
      windowSeconds: read.integer('OAUTH_AUTH_FAILURES_WINDOW_SECONDS', 300, 1, 86_400),
    },
    oauthRefreshTokenIdleDays: read.integer('OAUTH_REFRESH_TOKEN_IDLE_DAYS', 30, 1, 3650),
    oauthClients: {
      registrationsPerAddress: read.integer('OAUTH_REGISTRATIONS_PER_ADDRESS', 20, 1, 1_000_000),
      registrationWindowSeconds: read.integer('OAUTH_REGISTRATIONS_WINDOW_SECONDS', 3600, 1, 86_400),
      unusedClientDays: read.integer('OAUTH_UNUSED_CLIENT_DAYS', 7, 1, 3650),
      metadataFetchSeconds: read.integer('OAUTH_CLIENT_METADATA_TIMEOUT_SECONDS', 5, 1, 60),
    },
    accountLimits: {
      loginFailuresPerAddress: read.integer('LOGIN_FAILURES_PER_ADDRESS', 50, 1, 1_000_000),
      signupsPerAddress: read.integer('SIGNUPS_PER_ADDRESS', 10, 1, 1_000_000),
      windowSeconds: read.integer('ACCOUNT_LIMITS_WINDOW_SECONDS', 900, 1, 86_400),
    },
    signInFailures: {
      perOrganization: read.integer('SIGN_IN_FAILURES_PER_ORGANIZATION', 20, 1, 1_000_000),
      windowSeconds: read.integer('SIGN_IN_FAILURES_WINDOW_SECONDS', 900, 1, 86_400),
    },
  };
}
