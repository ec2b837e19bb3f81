import type { Response } from 'express';
import type { ConnectionFailure, ConnectionResult, ConnectionReturn } from '../providers/account-connections.js';
import type { ProviderAdapter } from '../providers/provider-adapter.js';
import type { ProvidersContext } from '../providers/registry.js';
import { renderErrorPage } from '../pages/render.js';
import { visitorOf } from '../pages/visitor.js';

/**
 * Where the user goes once a connection is finished or failed, after a network's consent page or this
 * server's sign-in or choice page: a connection started through the Public API back to its return URL
 * with the outcome, one started in the web app to Settings → Channels with a notice, and a visitor
 * signed in nowhere to a page that says what happened. A consent that reached several accounts sends
 * the user on to the page where they choose among them.
 */
export function answerConnection(
  ctx: ProvidersContext,
  res: Response,
  network: ProviderAdapter,
  result: ConnectionResult,
): void {
  if (result.ok === 'choose') return res.redirect(303, result.chooseAt);
  if (result.returnTo) return res.redirect(303, returnLocation(result.returnTo, result));
  if (result.ok) {
    const done =
      result.channels.length > 1
        ? result.reconnected
          ? 'several_reconnected'
          : 'several_connected'
        : result.reconnected
          ? 'reconnected'
          : 'connected';
    return res.redirect(303, `/settings/channels?done=${done}`);
  }
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
  none_chosen: 'access_denied',
};

/** The integrator's return URL with the outcome and their `state` added to its query. */
function returnLocation(returnTo: ConnectionReturn, result: Exclude<ConnectionResult, { ok: 'choose' }>): string {
  const url = new URL(returnTo.url);
  for (const name of ['channelId', 'channelIds', 'reconnected', 'error', 'errorDescription', 'state'])
    url.searchParams.delete(name);
  if (result.ok) {
    // `channelId` names the first, as for every network; `channelIds` all of them, when the user chose several.
    url.searchParams.set('channelId', result.channels[0]!.id);
    url.searchParams.set('channelIds', result.channels.map((channel) => channel.id).join(','));
    url.searchParams.set('reconnected', String(result.reconnected));
  } else {
    url.searchParams.set('error', RETURN_ERRORS[result.failure]);
    url.searchParams.set('errorDescription', result.reason);
  }
  if (returnTo.state !== null) url.searchParams.set('state', returnTo.state);
  return url.href;
}
