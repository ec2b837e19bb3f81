import { forgetOldAuditEntries } from './audit/log.js';
import { forgetOldDigests } from './mail/digest.js';
import { forgetExpiredMailTokens } from './accounts/mail-tokens.js';
import { forgetSpentInvitations } from './accounts/invitations.js';
import { forgetExpiredSessions } from './accounts/sessions.js';
import { forgetOldRateLimitWindows } from './http/rate-limit.js';
import type { MediaContext } from './media/storage.js';
import { deletePlannedFiles } from './media/file-deletions.js';
import { forgetStaleUploads } from './media/upload-sweep.js';
import { forgetExpiredCodes } from './oauth/codes.js';
import { forgetExpiredTokens } from './oauth/tokens.js';
import { forgetUnusedClients } from './oauth/registration.js';
import { forgetExpiredKeys } from './posts/idempotency.js';
import { forgetExpiredConnections } from './providers/account-connections.js';
import { revokeRemovedAccounts } from './providers/account-revocations.js';
import { warnOfEndingAccess } from './channels/access-warnings.js';
import type { ProvidersContext } from './providers/registry.js';
import { refreshTokensAhead } from './providers/token-upkeep.js';
import type { JobQueue } from './jobs/queue.js';
import { sweepDeliveries } from './webhooks/delivery-sweep.js';

/**
 * What the service forgets when it no longer serves anybody, as a scheduled job of the workers
 * (every 10 minutes) rather than inside requests: stale uploads and their bytes, rate-limit counts
 * of past windows, the files of deleted organizations, expired sessions and mailed links, spent
 * invitations (a week after), idempotency keys, OAuth codes, consent requests and expired OAuth
 * access and refresh tokens, OAuth clients that registered themselves and that nobody approved,
 * audit log entries older than their retention, the record of the daily digests sent after a week,
 * connections of accounts never finished, settled webhook deliveries older than their retention
 * (pg-boss deletes finished jobs itself, see JobQueue); it asks the networks to revoke the tokens of
 * removed channels and deleted organizations, refreshes the tokens that a network
 * refreshes only while they are good before they run out, warns of channels whose access ends within
 * a week, and plans again any webhook delivery that lost its job.
 */
export async function keepHouse(ctx: MediaContext & ProvidersContext & { queue: JobQueue }): Promise<void> {
  const now = ctx.clock.now();
  await forgetStaleUploads(ctx, now);
  await deletePlannedFiles(ctx);
  await forgetOldRateLimitWindows(ctx.db, now);
  await forgetExpiredSessions(ctx.db, now);
  await forgetExpiredMailTokens(ctx.db, now);
  await forgetSpentInvitations(ctx.db, now);
  await forgetExpiredKeys(ctx.db, now);
  await forgetExpiredCodes(ctx.db, now);
  await forgetExpiredTokens(ctx.db, now);
  await forgetUnusedClients(ctx.db, now, ctx.config.oauthClients.unusedClientDays);
  await forgetExpiredConnections(ctx.db, now);
  await forgetOldAuditEntries(ctx.db, now, ctx.config.retention.auditLogDays);
  await forgetOldDigests(ctx.db, now);
  await revokeRemovedAccounts(ctx);
  await refreshTokensAhead(ctx);
  await warnOfEndingAccess(ctx.db, now);
  await sweepDeliveries(ctx);
}
