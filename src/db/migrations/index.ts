import type { Migration } from 'kysely/migration';
import * as foundation from './2026-11-21-01-foundation.js';
import * as posts from './2026-11-21-02-posts.js';
import * as media from './2026-11-21-03-media.js';
import * as oauth from './2026-11-21-04-oauth.js';
import * as appPictures from './2026-11-21-05-app-pictures.js';
import * as publishing from './2026-11-23-01-publishing.js';
import * as channelStatus from './2026-11-23-02-channel-status.js';
import * as channelConnections from './2026-11-23-03-channel-connections.js';
import * as apiConnections from './2026-11-24-01-api-connections.js';
import * as tiktok from './2026-11-24-02-tiktok.js';
import * as webhooks from './2026-11-24-03-webhooks.js';
import * as unloggedRateLimits from './2026-11-25-01-unlogged-rate-limits.js';
import * as threads from './2026-11-27-01-threads.js';
import * as altTexts from './2026-11-27-02-alt-texts.js';
import * as textNetworks from './2026-11-27-03-text-networks.js';
import * as mastodon from './2026-11-27-04-mastodon.js';
import * as signIn from './2026-11-27-05-sign-in.js';
import * as meta from './2026-11-27-06-meta.js';
import * as accountChoice from './2026-11-27-07-account-choice.js';
import * as mediaDimensions from './2026-11-27-08-media-dimensions.js';
import * as channelExpiring from './2026-11-27-09-channel-expiring.js';
import * as linkedin from './2026-11-27-10-linkedin.js';
import * as pinterest from './2026-11-27-11-pinterest.js';
import * as oauthResource from './2026-11-27-12-oauth-resource.js';
import * as oauthScope from './2026-11-27-13-oauth-scope.js';
import * as documents from './2026-11-27-14-documents.js';
import * as oauthRefresh from './2026-11-27-15-oauth-refresh.js';
import * as oauthClients from './2026-11-27-16-oauth-clients.js';
import * as mail from './2026-11-27-17-mail.js';
import * as roles from './2026-11-27-18-roles.js';
import * as retention from './2026-11-27-19-retention.js';
import * as approval from './2026-11-28-01-approval.js';
import * as audit from './2026-11-28-02-audit.js';
import * as lifecycle from './2026-11-28-03-lifecycle.js';
import * as queue from './2026-11-28-04-queue.js';
import * as recurring from './2026-11-28-05-recurring.js';
import * as postImports from './2026-11-28-06-import.js';
import * as postFilters from './2026-11-29-01-post-filters.js';
import * as channelList from './2026-11-30-01-channel-list.js';

/** Every migration, keyed by a name that sorts by date. Add new ones; never edit a landed one. */
export const migrations: Record<string, Migration> = {
  '2026-11-21-01-foundation': foundation,
  '2026-11-21-02-posts': posts,
  '2026-11-21-03-media': media,
  '2026-11-21-04-oauth': oauth,
  '2026-11-21-05-app-pictures': appPictures,
  '2026-11-23-01-publishing': publishing,
  '2026-11-23-02-channel-status': channelStatus,
  '2026-11-23-03-channel-connections': channelConnections,
  '2026-11-24-01-api-connections': apiConnections,
  '2026-11-24-02-tiktok': tiktok,
  '2026-11-24-03-webhooks': webhooks,
  '2026-11-25-01-unlogged-rate-limits': unloggedRateLimits,
  '2026-11-27-01-threads': threads,
  '2026-11-27-02-alt-texts': altTexts,
  '2026-11-27-03-text-networks': textNetworks,
  '2026-11-27-04-mastodon': mastodon,
  '2026-11-27-05-sign-in': signIn,
  '2026-11-27-06-meta': meta,
  '2026-11-27-07-account-choice': accountChoice,
  '2026-11-27-08-media-dimensions': mediaDimensions,
  '2026-11-27-09-channel-expiring': channelExpiring,
  '2026-11-27-10-linkedin': linkedin,
  '2026-11-27-11-pinterest': pinterest,
  '2026-11-27-12-oauth-resource': oauthResource,
  '2026-11-27-13-oauth-scope': oauthScope,
  '2026-11-27-14-documents': documents,
  '2026-11-27-15-oauth-refresh': oauthRefresh,
  '2026-11-27-16-oauth-clients': oauthClients,
  '2026-11-27-17-mail': mail,
  '2026-11-27-18-roles': roles,
  '2026-11-27-19-retention': retention,
  '2026-11-28-01-approval': approval,
  '2026-11-28-02-audit': audit,
  '2026-11-28-03-lifecycle': lifecycle,
  '2026-11-28-04-queue': queue,
  '2026-11-28-05-recurring': recurring,
  '2026-11-28-06-import': postImports,
  '2026-11-29-01-post-filters': postFilters,
  '2026-11-30-01-channel-list': channelList,
};
