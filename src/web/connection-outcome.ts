import type { Response } from 'express';
import type { ConnectionFailure, ConnectionResult, ConnectionReturn } from '../providers/account-connections.js';
import type { ProviderAdapter } from '../providers/provider-adapter.js';
import type { ProvidersContext } from '../providers/registry.js';
import { renderErrorPage } from '../pages/render.js';
import { visitorOf } from '../pages/visitor.js';

/**
 * Where the user goes once a connection is finished or failed, after a network's consent page or this
 * server's sign-in page: a connection started through the Public API back to its return URL with the
 * outcome, one started in the web app to Settings → Channels with a notice, and a visitor signed in
 * nowhere to a page that says what happened.
 */
export function answerConnection(
  ctx: ProvidersContext,
  res: Response,
  network: ProviderAdapter,
  result: ConnectionResult,
): void {
  if (result.returnTo) return res.redirect(303, returnLocation(result.returnTo, result));
  if (result.ok)
    return res.redirect(303, `/settings/channels?done=${result.reconnected ? 'reconnected' : 'connected'}`);
  if (result.failure === 'refused')
    ctx.logger.info({ provider: network.provider, reason: result.reason }, 'a network refused a connection');
  if (!visitorOf(res)?.organization)
    return renderErrorPage(res, 400, `${network.name} was not connected`, result.reason);
  res.redirect(303, `/settings/channels?failed=${result.failure}&network=${network.provider}`);
}

/** The `error` values a return URL receives (see `connectChannel` in the contract). */
const RETURN_ERRORS: Record<ConnectionFailure, string> = {
  unknown: 'refused',
  expired: 'expired',
  other_session: 'refused',
  denied: 'access_denied',
  refused: 'refused',
  no_channel: 'refused',
  unreachable: 'unavailable',
};

/** The integrator's return URL with the outcome and their `state` added to its query. */
function returnLocation(returnTo: ConnectionReturn, result: ConnectionResult): string {
  const url = new URL(returnTo.url);
  for (const name of ['channelId', 'reconnected', 'error', 'errorDescription', 'state']) url.searchParams.delete(name);
  if (result.ok) {
    url.searchParams.set('channelId', result.channel.id);
    url.searchParams.set('reconnected', String(result.reconnected));
  } else {
    url.searchParams.set('error', RETURN_ERRORS[result.failure]);
    url.searchParams.set('errorDescription', result.reason);
  }
  if (returnTo.state !== null) url.searchParams.set('state', returnTo.state);
  return url.href;
}
