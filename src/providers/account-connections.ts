import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Provider } from '../core/contract.js';
import { UnprocessableError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { hashSecret } from '../crypto/issued-secrets.js';
import type { Keyring } from '../crypto/keyring.js';
import type { Db } from '../db/database.js';
import { ConnectionRefusedError, type AccountCredentials } from './connection.js';
import type { ProvidersContext } from './providers.js';
import type { Channel } from '../channels/tables.js';
import { credentialsContext, verifierContext } from './account-credentials.js';

/** How long a user may stay at the network's consent page. */
const CONNECTION_LIFETIME_MS = 15 * 60_000;

/** Where the networks send the user back: `/channels/callback/{provider}` of this server. */
export function callbackUrl(publicUrl: string, provider: Provider): string {
  return `${publicUrl}/channels/callback/${provider}`;
}

/**
 * Starts connecting an account of `provider` to the organization: records the authorization in
 * progress (the hash of a fresh `state`, an encrypted PKCE verifier, the browser session that may
 * finish it) and answers the network's consent page to send the user to.
 */
export async function startConnection(
  ctx: ProvidersContext,
  request: { organizationId: string; provider: Provider; sessionId: string },
): Promise<{ authorizationUrl: string }> {
  const adapter = ctx.providers.connections[request.provider];
  if (!adapter) throw new UnprocessableError(`Connecting ${request.provider} accounts is not configured by the operator of this server.`);
  const id = newId('conn');
  const state = randomBytes(32).toString('base64url');
  const verifier = randomBytes(32).toString('base64url');
  await ctx.db
    .insertInto('channel_connections')
    .values({
      id,
      state_hash: hashSecret(state),
      organization_id: request.organizationId,
      provider: request.provider,
      code_verifier: ctx.keyring.encrypt(verifier, verifierContext(id)),
      session_id: request.sessionId,
      expires_at: new Date(ctx.clock().getTime() + CONNECTION_LIFETIME_MS),
    })
    .execute();
  const codeChallenge = createHash('sha256').update(verifier).digest('base64url');
  return { authorizationUrl: adapter.authorizeUrl({ state, redirectUri: callbackUrl(ctx.config.publicUrl, request.provider), codeChallenge }) };
}

export type ConnectionResult =
  | { ok: true; organizationId: string; channel: Channel; reconnected: boolean }
  | { ok: false; organizationId?: string; failure: ConnectionFailure; reason: string };

/** Why a connection did not finish, as a code the pages turn into words of their own. */
export type ConnectionFailure = 'unknown' | 'expired' | 'other_session' | 'denied' | 'refused' | 'unreachable';

/**
 * Finishes a connection when the network sends the user back: the `state` must be one this server
 * issued for this provider, unused, unexpired and started by this browser session; then the code is
 * traded for tokens, the account's identity read, and its channel created, or updated (tokens,
 * name, picture, `active` again) when the organization connected that account before.
 */
export async function finishConnection(
  ctx: ProvidersContext,
  provider: Provider,
  answer: { state?: string; code?: string; error?: string },
  sessionId: string | undefined,
): Promise<ConnectionResult> {
  const adapter = ctx.providers.connections[provider];
  if (!adapter || !answer.state) return { ok: false, failure: 'unknown', reason: 'This is not an answer to a connection this server started.' };
  // Single use: the pending connection is taken out before anything else happens.
  const pending = await ctx.db
    .deleteFrom('channel_connections')
    .where('state_hash', '=', hashSecret(answer.state))
    .where('provider', '=', provider)
    .returningAll()
    .executeTakeFirst();
  if (!pending) return { ok: false, failure: 'unknown', reason: 'This connection is unknown or was finished already; start it again from Settings → Channels.' };
  if (pending.expires_at.getTime() < ctx.clock().getTime()) return { ok: false, organizationId: pending.organization_id, failure: 'expired', reason: 'This connection took too long; start it again.' };
  if (pending.session_id !== sessionId) return { ok: false, failure: 'other_session', reason: 'This connection was started in another browser session; start it again here.' };
  const organizationId = pending.organization_id;
  if (answer.error || !answer.code) {
    const reason = answer.error === 'access_denied' ? 'You did not allow access on the network; nothing was connected.' : `The network answered ${answer.error ?? 'without a code'}; nothing was connected.`;
    return { ok: false, organizationId, failure: answer.error === 'access_denied' ? 'denied' : 'refused', reason };
  }
  try {
    const codeVerifier = ctx.keyring.decrypt(pending.code_verifier, verifierContext(pending.id));
    const credentials = await adapter.exchangeCode({ code: answer.code, redirectUri: callbackUrl(ctx.config.publicUrl, provider), codeVerifier });
    const identity = await adapter.identity(credentials);
    const { channel, reconnected } = await saveConnectedChannel(ctx.db, ctx.keyring, { organizationId, provider, identity, credentials, now: ctx.clock() });
    return { ok: true, organizationId, channel, reconnected };
  } catch (error) {
    if (error instanceof ConnectionRefusedError) return { ok: false, organizationId, failure: 'refused', reason: `The network refused the connection: ${error.message}.` };
    ctx.logger.warn({ err: error, provider }, 'connecting an account failed');
    return { ok: false, organizationId, failure: 'unreachable', reason: 'The network could not be reached to finish the connection; try again in a moment.' };
  }
}

async function saveConnectedChannel(
  db: Db,
  keyring: Keyring,
  input: { organizationId: string; provider: Provider; identity: { externalId: string; name: string; username: string | null; picture: string | null }; credentials: AccountCredentials; now: Date },
): Promise<{ channel: Channel; reconnected: boolean }> {
  const { organizationId, provider, identity } = input;
  const credentials = keyring.encrypt(JSON.stringify(input.credentials), credentialsContext(organizationId, provider, identity.externalId));
  const { rows } = await sql<Channel & { inserted: boolean }>`
    insert into channels (id, organization_id, provider, name, username, picture, status, external_id, credentials, connected_at)
    values (${newId('ch')}, ${organizationId}, ${provider}, ${identity.name}, ${identity.username}, ${identity.picture}, 'active', ${identity.externalId}, ${credentials}, ${input.now})
    on conflict (organization_id, provider, external_id) where external_id is not null do update set
      name = excluded.name, username = excluded.username, picture = excluded.picture, status = 'active',
      credentials = excluded.credentials, connected_at = excluded.connected_at
    returning *, (xmax = 0) as inserted`.execute(db);
  const { inserted, ...channel } = rows[0]!;
  return { channel, reconnected: !inserted };
}

/** Forgets connections whose user never came back. */
export async function forgetExpiredConnections(db: Db, now: Date): Promise<void> {
  await db.deleteFrom('channel_connections').where('expires_at', '<', now).execute();
}

