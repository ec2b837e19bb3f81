import type { Db } from '../db/database.js';
import { knownResource, MCP_RESOURCE_PATH, PUBLIC_API_RESOURCE_PATH } from '../http/resource-challenge.js';
import { contractScopes } from '../http/scopes.js';
import { findAppByClientId } from './apps.js';
import { isWellFormedPkceValue } from './pkce.js';
import { matchRedirectUri } from './registration.js';
import type { OAuthApp } from './tables.js';

/** The authorize query as the query parser leaves it: a repeated parameter is an array. */
export type AuthorizationQuery = Record<string, string | string[] | undefined>;

const MAX_STATE_LENGTH = 2048;
// Parameter names an error description may repeat: anything else in a link is the link-maker's text,
// and the description lands on the app's page, which may show it.
const KNOWN_PARAMETERS = new Set([
  'client_id',
  'response_type',
  'redirect_uri',
  'state',
  'scope',
  'code_challenge',
  'code_challenge_method',
  'resource',
]);

export type ClientCheck =
  | {
      ok: true;
      app: OAuthApp;
      /** Where the answer goes: the registered redirect URI the request named, or the only one. */
      redirectUri: string;
      redirectUriGiven: boolean;
    }
  | { ok: false; message: string };

/** Finds a client by its client id, fetching its metadata document when the id is one's URL. */
export type ClientLookup = (clientId: string) => Promise<{ app: OAuthApp } | { message: string } | undefined>;

/**
 * Who is asking, and may the answer go to them? RFC 6749 §4.1.2.1: when the client or the redirect
 * URI cannot be trusted, the user is told and never redirected, or the endpoint would be an open
 * redirector. The redirect URI must be the registered one exactly (RFC 9700 §2.1).
 */
export async function identifyClient(db: Db, query: AuthorizationQuery, lookup?: ClientLookup): Promise<ClientCheck> {
  const clientId = query.client_id;
  if (typeof clientId !== 'string' || clientId === '') {
    return {
      ok: false,
      message:
        'The link does not name the app asking for access (its client_id is missing or given twice). ' +
        'Ask the app’s developer to fix the link.',
    };
  }
  const found = lookup ? await lookup(clientId) : undefined;
  if (found && 'message' in found) return { ok: false, message: found.message };
  const app = found?.app ?? (await findAppByClientId(db, clientId));
  if (!app) {
    return {
      ok: false,
      message:
        'No app with this client_id is registered here: it may have been deleted. ' +
        'Ask the app’s developer to fix the link.',
    };
  }
  const given = query.redirect_uri;
  if (given === undefined) {
    // RFC 6749 §3.1.2.3: with several registered, the request must say which.
    if (app.redirect_uris.length > 1) {
      return {
        ok: false,
        message:
          'The link has no redirect_uri, and this app registered several: ask the app’s developer to fix the link.',
      };
    }
    return { ok: true, app, redirectUri: app.redirect_uri, redirectUriGiven: false };
  }
  const redirectUri = typeof given === 'string' ? matchRedirectUri(app, given) : undefined;
  if (redirectUri === undefined) {
    return {
      ok: false,
      message:
        'The link’s redirect_uri is not the redirect URL registered for this app, so you will not be sent there.',
    };
  }
  return { ok: true, app, redirectUri, redirectUriGiven: true };
}

export type ParameterCheck =
  | {
      ok: true;
      state: string | undefined;
      codeChallenge: string | undefined;
      resource: string | undefined;
      /** The scopes asked for, in the contract's order; `undefined`: every operation. */
      scope: string[] | undefined;
    }
  | {
      ok: false;
      error: AuthorizationError;
      description: string;
      state: string | undefined;
    };

type AuthorizationError = 'invalid_request' | 'unsupported_response_type' | 'invalid_target' | 'invalid_scope';

/**
 * The rest of the request of a known app; its errors go back to the app with the state. `origin` is
 * this installation's, whose resources a `resource` (RFC 8707) may name.
 */
export function checkAuthorizationParameters(
  query: AuthorizationQuery,
  origin: string,
  /** A public client (no secret): its code is protected by PKCE or by nothing, so PKCE is required. */
  requirePkce = false,
): ParameterCheck {
  const givenState = typeof query.state === 'string' ? query.state : undefined;
  const state = givenState !== undefined && givenState.length <= MAX_STATE_LENGTH ? givenState : undefined;
  const fail = (error: AuthorizationError, description: string): ParameterCheck => ({
    ok: false,
    error,
    description,
    state,
  });

  // RFC 6749 §3.1: parameters must not be included more than once.
  const repeated = Object.keys(query).find((name) => Array.isArray(query[name]));
  if (repeated) {
    return fail(
      'invalid_request',
      KNOWN_PARAMETERS.has(repeated)
        ? `The ${repeated} parameter is given more than once.`
        : 'A parameter is given more than once.',
    );
  }
  if (givenState !== state)
    return fail('invalid_request', `The state parameter is longer than ${MAX_STATE_LENGTH} characters.`);
  const responseType = query.response_type;
  if (!responseType) return fail('invalid_request', 'The response_type parameter is missing; it must be code.');
  if (responseType !== 'code') return fail('unsupported_response_type', 'Only response_type=code is supported.');

  const challenge = query.code_challenge as string | undefined;
  const method = query.code_challenge_method as string | undefined;
  if (challenge === undefined && method !== undefined)
    return fail('invalid_request', 'code_challenge_method was sent without a code_challenge.');
  if (challenge === undefined && requirePkce) {
    return fail(
      'invalid_request',
      'This client has no secret, so PKCE is required: send code_challenge and code_challenge_method=S256.',
    );
  }
  if (challenge !== undefined) {
    // RFC 9700 §2.1.1: plain offers no protection once the request is seen, so only S256 is accepted.
    // RFC 7636 §4.3 reads a missing method as plain: refused too, rather than guessed to be S256.
    if (method === undefined)
      return fail('invalid_request', 'The code_challenge_method parameter is missing; it must be S256.');
    if (method !== 'S256') return fail('invalid_request', 'Only code_challenge_method=S256 is supported.');
    if (!isWellFormedPkceValue(challenge)) {
      return fail(
        'invalid_request',
        'The code_challenge must be 43 to 128 characters of A-Z, a-z, 0-9, hyphen, period, underscore and tilde.',
      );
    }
  }
  // RFC 8707 §2: the one resource the token is for; one this server does not have is invalid_target.
  // (Several resources in one request are refused above, as any repeated parameter.)
  const given = query.resource as string | undefined;
  const resource = given === undefined ? undefined : knownResource(origin, given);
  if (given !== undefined && resource === undefined) {
    return fail(
      'invalid_target',
      `The resource parameter must name a resource of this server: ${origin}${MCP_RESOURCE_PATH}, ` +
        `${origin}${PUBLIC_API_RESOURCE_PATH} or ${origin}.`,
    );
  }
  // RFC 6749 §3.3: space-separated scopes of the contract; an unknown one is invalid_scope.
  const givenScope = query.scope as string | undefined;
  let scope: string[] | undefined;
  if (givenScope !== undefined) {
    const asked = new Set(givenScope.split(' ').filter(Boolean));
    const known = [...contractScopes().keys()];
    const unknown = [...asked].filter((name) => !known.includes(name));
    if (asked.size === 0 || unknown.length > 0) {
      return fail('invalid_scope', `The scope parameter must be space-separated scopes among: ${known.join(' ')}.`);
    }
    scope = known.filter((name) => asked.has(name));
  }
  return { ok: true, state, codeChallenge: challenge, resource, scope };
}
