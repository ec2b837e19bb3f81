import { hashSecret, isWellFormedCredential } from '../crypto/issued-secrets.js';
import type { Db } from '../db/database.js';
import { OAuthError } from './errors.js';
import { CODE_PREFIX } from './grants.js';
import { verifierMatchesChallenge } from './pkce.js';
import type { OAuthApp, OAuthCode } from './tables.js';
import { issueAccessToken, revokeTokensOfCode } from './tokens.js';
import { transaction } from '../db/transaction.js';

export interface CodeRedemption {
  code: string;
  redirectUri: string | undefined;
  codeVerifier: string | undefined;
  /** RFC 8707 `resource` of the token request, in its canonical form; `undefined` when not sent. */
  resource: string | undefined;
}

const invalidGrant = (description: string) => new OAuthError('invalid_grant', description);
const USED_TWICE = 'The authorization code has already been used; the token issued for it has been revoked.';

/**
 * Exchanges an authorization code of an authenticated app for an access token. The code must be
 * this app's (another app's code is unknown to it), unexpired, unused, and match the redirect URI
 * and PKCE challenge of its authorization request.
 */
export async function redeemCode(db: Db, app: OAuthApp, redemption: CodeRedemption, now: Date) {
  if (!isWellFormedCredential(redemption.code, CODE_PREFIX)) throw invalidGrant('The authorization code is not valid.');
  const code = await db
    .selectFrom('oauth_codes')
    .selectAll()
    .where('code_hash', '=', hashSecret(redemption.code))
    .where('app_id', '=', app.id)
    .executeTakeFirst();
  if (!code) throw invalidGrant('The authorization code is not valid.');

  // RFC 6749 §4.1.2 and §10.5: a code used twice has leaked, so the tokens it produced are revoked.
  // Only a client that authenticated gets this far: somebody holding just the code revokes nothing.
  if (code.consumed_at) {
    await revokeTokensOfCode(db, code.id, now);
    throw invalidGrant(USED_TWICE);
  }
  if (code.expires_at.getTime() <= now.getTime()) throw invalidGrant('The authorization code has expired.');

  assertSameRedirect(code, app, redemption);
  assertVerifierMatches(code, redemption);
  const resource = tokenResource(code, redemption);
  const accessToken = await claimAndIssue(db, app, code, resource, now);
  if (!accessToken) {
    // Lost the race to another redemption: that is a second use, so its token goes too.
    await revokeTokensOfCode(db, code.id, now);
    throw invalidGrant(USED_TWICE);
  }
  return { organizationId: code.organization_id, accessToken, scope: code.scope, appId: app.id };
}

// RFC 6749 §4.1.3: the redirect_uri of the authorization request must be sent again, identical.
function assertSameRedirect(code: OAuthCode, app: OAuthApp, redemption: CodeRedemption): void {
  const expectedRedirect = code.redirect_uri ?? app.redirect_uri;
  if (code.redirect_uri !== null && redemption.redirectUri === undefined) {
    throw invalidGrant('The redirect_uri parameter is required: the authorization request carried one.');
  }
  if (redemption.redirectUri !== undefined && redemption.redirectUri !== expectedRedirect) {
    throw invalidGrant('The redirect_uri does not match the one of the authorization request.');
  }
}

// RFC 7636 §4.6, and RFC 9700 §2.1.1: a verifier for a code issued without a challenge is refused,
// so that a code obtained without PKCE cannot be passed off as one protected by it.
function assertVerifierMatches(code: OAuthCode, redemption: CodeRedemption): void {
  if (code.code_challenge !== null) {
    if (redemption.codeVerifier === undefined)
      throw invalidGrant('The code_verifier parameter is required for this code.');
    if (!verifierMatchesChallenge(redemption.codeVerifier, code.code_challenge)) {
      throw invalidGrant('The code_verifier does not match the code_challenge.');
    }
  } else if (redemption.codeVerifier !== undefined) {
    throw invalidGrant('This code was issued without a code_challenge, so no code_verifier is accepted.');
  }
}

/**
 * RFC 8707 §2.2: the token is for the resource of the token request, which must be the one the user
 * authorized when the authorization request named one; without either, it is for every resource.
 */
function tokenResource(code: OAuthCode, redemption: CodeRedemption): string | null {
  if (redemption.resource === undefined) return code.resource;
  if (code.resource !== null && redemption.resource !== code.resource && !covers(code.resource, redemption.resource)) {
    throw new OAuthError('invalid_target', `This code was authorized for ${code.resource} only.`);
  }
  return redemption.resource;
}

/** The origin is the resource of both the Public API and the MCP server: a token may be narrowed to one. */
const covers = (granted: string, requested: string) => new URL(requested).origin === granted;

/** Marks the code used and issues its token in one transaction; `undefined` when another redemption was first. */
function claimAndIssue(db: Db, app: OAuthApp, code: OAuthCode, resource: string | null, now: Date) {
  return transaction(db, async (trx) => {
    // One atomic claim: of any number of concurrent redemptions exactly one sees the row unconsumed.
    const claimed = await trx
      .updateTable('oauth_codes')
      .set({ consumed_at: now })
      .where('id', '=', code.id)
      .where('consumed_at', 'is', null)
      .returning('id')
      .executeTakeFirst();
    if (!claimed) return undefined;
    return issueAccessToken(trx, {
      grantId: code.grant_id,
      appId: app.id,
      organizationId: code.organization_id,
      codeId: code.id,
      resource,
      scope: code.scope,
    });
  });
}

// A code past its expiry is refused whatever it says; a day later it is not even worth telling apart.
const CODE_KEPT_AFTER_EXPIRY_MS = 86_400_000;

/** Housekeeping: deletes codes a day past their expiry, and consent requests past theirs. */
export async function forgetExpiredCodes(db: Db, now: Date): Promise<void> {
  await db
    .deleteFrom('oauth_codes')
    .where('expires_at', '<', new Date(now.getTime() - CODE_KEPT_AFTER_EXPIRY_MS))
    .execute();
  await db.deleteFrom('oauth_authorization_requests').where('expires_at', '<=', now).execute();
}
