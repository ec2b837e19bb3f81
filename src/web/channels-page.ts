import express, { type Request, type Response, type Router } from 'express';
import { addChannel, findChannel, listChannels, setChannelEnabled } from '../channels/channels.js';
import {
  addReturnOrigin,
  listReturnOrigins,
  MAX_RETURN_ORIGINS,
  parseReturnOrigin,
  removeReturnOrigin,
} from '../channels/return-origins.js';
import type { AuditActor } from '../audit/log.js';
import type { ChannelRemoval } from '../channels/removal.js';
import { DomainError } from '../core/errors.js';
import { field } from '../pages/visitor.js';
import { formatTime } from '../pages/forms.js';
import { renderErrorPage, renderPage } from '../pages/render.js';
import { visitorOf } from '../pages/visitor.js';
import { finishConnection, startConnection, type ConnectionFailure } from '../providers/account-connections.js';
import type { PostsContext } from '../posts/context.js';
import { allNetworks, type Providers } from '../providers/registry.js';
import { channelCredentials } from '../providers/account-credentials.js';
import { siteChoiceOf, SiteRefusedError } from '../providers/connection-contract.js';
import { endingAccessOf } from '../channels/access-warnings.js';
import type { Provider } from '../core/contract.js';
import type { Channel } from '../channels/tables.js';
import { connectedThrough } from '../providers/facebook/connection.js';
import { capitalized, renderContinue } from './channel-site-pages.js';
import { answerConnection } from './connection-outcome.js';
import { signedIn } from './signed-in.js';
import { zoneOf } from './time-zone.js';
import { confirmedOrAsk } from './confirm-first.js';

const STATUS_WORDS = {
  active: 'Active',
  needs_reconnect: 'Needs reconnecting',
  disabled: 'Disabled',
  removed: 'Removed',
} as const;
/** The networks whose accounts a user connects through the network's consent page. */
const connectable = (providers: Providers) => allNetworks(providers).filter((network) => network.connectsAccounts);
const MAX_NAME_LENGTH = 100;

/**
 * Settings → Channels: the organization's channels with their status; a sandbox channel can be
 * added, a channel disabled, enabled or removed (its scheduled and failed posts become drafts).
 */
export function channelsPage(ctx: PostsContext, channelRemoval: ChannelRemoval): Router {
  const router = express.Router();
  const show = (res: Response, notice?: string, problem?: string, status = 200) =>
    showChannels(ctx, res, notice, problem, status);

  router.get('/settings/channels', async (req, res) => {
    const done = typeof req.query.done === 'string' ? req.query.done : undefined;
    await show(res, done && done in NOTICES ? NOTICES[done as keyof typeof NOTICES] : undefined, failureOf(ctx, req));
  });

  router.post('/settings/channels/connect/:provider', async (req, res) => {
    const { visitor, organization } = signedIn(res);
    const network = connectable(ctx.providers).find((n) => n.provider === req.params.provider);
    if (!network) return show(res, undefined, 'There is no such network.', 404);
    // A network whose accounts live on servers of their own: the site typed in, or a channel's to reconnect.
    const siteChoice = siteChoiceOf(network.connection);
    const site = siteChoice
      ? field(req, 'channel')
        ? await siteOfChannel(ctx, organization.id, network.provider, field(req, 'channel'))
        : field(req, 'site').trim()
      : undefined;
    if (site === '') return show(res, undefined, `${network.name}: ${siteChoice!.label} is needed.`, 400);
    try {
      const { authorizationUrl } = await startConnection(ctx, {
        organizationId: organization.id,
        provider: network.provider,
        sessionId: visitor.sessionId,
        ...(site === undefined ? {} : { site }),
      });
      if (site !== undefined) return renderContinue(res, network, authorizationUrl, '/settings/channels');
      // Signing in again on this server's page: the account is named there already.
      const again =
        network.connection?.kind === 'sign-in' && (await accountOfChannel(ctx, organization.id, field(req, 'channel')));
      res.redirect(
        303,
        again ? `${authorizationUrl}&${new URLSearchParams({ account: again }).toString()}` : authorizationUrl,
      );
    } catch (error) {
      if (error instanceof SiteRefusedError)
        return show(res, undefined, `${network.name}: ${capitalized(error.message)}.`, 422);
      if (!(error instanceof DomainError) || error.status >= 500) throw error;
      return show(res, undefined, error.message, error.status);
    }
  });

  router.post('/settings/channels/sandbox', async (req, res) => {
    const { organization } = signedIn(res);
    const name = field(req, 'name').trim() || 'Sandbox';
    if (name.length > MAX_NAME_LENGTH)
      return show(res, undefined, `A channel name has at most ${MAX_NAME_LENGTH} characters.`, 400);
    await addChannel(ctx.db, {
      organization_id: organization.id,
      provider: 'sandbox',
      name,
      username: null,
      picture: null,
    });
    res.redirect(303, '/settings/channels?done=added');
  });

  router.use(returnOriginRoutes(ctx, show));

  router.post('/settings/channels/:id/:action', async (req: Request, res) => {
    const { organization } = signedIn(res);
    const action = String(req.params.action);
    if (action === 'remove') {
      const channel = await findChannel(ctx.db, organization.id, String(req.params.id));
      const confirmation = {
        question: `Remove ${channel?.name ?? 'this channel'}?`,
        consequence:
          'Its scheduled and failed posts become drafts (nothing of them is lost); nothing changes on the network.',
        button: 'Remove the channel',
        back: '/settings/channels',
        path: '/settings/channels',
      };
      if (channel && !confirmedOrAsk(req, res, confirmation)) return;
    }
    try {
      const refused = await channelAction(ctx, channelRemoval, organization.id, String(req.params.id), action, {
        user: signedIn(res).visitor.user.id,
      });
      if (refused) return show(res, undefined, refused, 404);
    } catch (error) {
      if (!(error instanceof DomainError) || error.status >= 500) throw error;
      return show(res, undefined, error.message, error.status);
    }
    res.redirect(
      303,
      `/settings/channels?done=${action === 'remove' ? 'removed' : action === 'enable' ? 'enabled' : 'disabled'}`,
    );
  });

  return router;
}

type ShowChannels = (res: Response, notice?: string, problem?: string, status?: number) => Promise<void>;

async function showChannels(
  ctx: PostsContext,
  res: Response,
  notice: string | undefined,
  problem: string | undefined,
  status: number,
): Promise<void> {
  const { organization } = signedIn(res);
  const [channels, returnOrigins, endingAccess] = await Promise.all([
    listChannels(ctx.db, organization.id),
    listReturnOrigins(ctx.db, organization.id),
    endingAccessOf(ctx.db, organization.id),
  ]);
  renderPage(
    res,
    '/web/templates/channels',
    {
      title: 'Channels',
      path: '/settings/channels',
      channels: channels.map((channel) => ({
        ...channel,
        statusText: STATUS_WORDS[channel.status],
        reconnectVia: reconnectVia(ctx, channel),
        // Warned of: the day its access ends, when the user should connect it again before.
        accessEnds:
          channel.status === 'active' && endingAccess.has(channel.id)
            ? formatTime(endingAccess.get(channel.id), zoneOf(res))
            : undefined,
      })),
      // Connecting an account needs the operator's app at that network.
      networks: connectable(ctx.providers).map((network) => ({
        provider: network.provider,
        name: network.name,
        configured: network.connection !== undefined,
        site: siteChoiceOf(network.connection) && {
          label: siteChoiceOf(network.connection)!.label,
          example: siteChoiceOf(network.connection)!.example,
        },
      })),
      returnOrigins,
      notice,
      problem,
    },
    status,
    // The Connect forms answer with a redirect to the network's consent page, which browsers
    // check against the page's form-action. The accounts' pictures are the networks' own (TikTok's
    // avatar URLs are signed and short-lived): only their origins are allowed as image sources.
    {
      formOrigins: connectable(ctx.providers).flatMap((network) =>
        network.connection?.kind === 'consent' && network.connection.consentOrigin
          ? [network.connection.consentOrigin]
          : [],
      ),
      mediaOrigins: [...new Set(channels.flatMap((channel) => pictureOrigin(channel.picture)))],
    },
  );
}

/** Why a connection did not finish: a code, so that a link cannot put words of its own on the page. */
function failureOf(ctx: PostsContext, req: Request): string | undefined {
  const network = connectable(ctx.providers).find((n) => n.provider === req.query.network);
  const failure =
    typeof req.query.failed === 'string' && req.query.failed in FAILURES
      ? FAILURES[req.query.failed as ConnectionFailure]
      : undefined;
  if (!failure || !network) return failure;
  // Where the network has a page for making a channel (YouTube's), the words say so.
  const createAt =
    req.query.failed === 'no_channel' && network.connection?.kind === 'consent'
      ? network.connection.createChannelUrl
      : undefined;
  return `${network.name}: ${createAt ? noChannel(createAt) : failure}`;
}

/** The origins an integrator's users may be sent back to after connecting a channel through the API. */
function returnOriginRoutes(ctx: PostsContext, show: ShowChannels): Router {
  const router = express.Router();
  router.post('/settings/channels/return-origins', async (req, res) => {
    const { organization } = signedIn(res);
    const parsed = parseReturnOrigin(field(req, 'origin'));
    if ('problem' in parsed) return show(res, undefined, parsed.problem, 400);
    if (!(await addReturnOrigin(ctx.db, organization.id, parsed.origin))) {
      return show(
        res,
        undefined,
        `An organization lists at most ${MAX_RETURN_ORIGINS} return origins; remove one first.`,
        422,
      );
    }
    res.redirect(303, '/settings/channels?done=origin_added');
  });

  router.post('/settings/channels/return-origins/remove', async (req, res) => {
    const { organization } = signedIn(res);
    await removeReturnOrigin(ctx.db, organization.id, field(req, 'origin'));
    res.redirect(303, '/settings/channels?done=origin_removed');
  });
  return router;
}

/** Removes, disables or enables a channel; what is refused as not found, or `undefined` when done. */
async function channelAction(
  ctx: PostsContext,
  channelRemoval: ChannelRemoval,
  organizationId: string,
  id: string,
  action: string,
  actor: AuditActor,
): Promise<string | undefined> {
  if (action === 'remove') await channelRemoval.remove(organizationId, id, actor);
  else if (action === 'disable' || action === 'enable') {
    if (!(await setChannelEnabled(ctx.db, organizationId, id, action === 'enable'))) return 'There is no such channel.';
  } else return 'There is no such action.';
  return undefined;
}

/**
 * Where a network sends the user back after its consent page (outside /settings: the network's
 * redirect carries no CSRF token; the `state` it returns is what binds it to the browser session
 * that started the connection).
 */
export function channelCallbackPage(ctx: PostsContext): Router {
  const router = express.Router();
  router.get('/channels/callback/:provider', async (req, res) => {
    const network = connectable(ctx.providers).find((n) => n.provider === req.params.provider);
    if (!network) return renderErrorPage(res, 404, 'Not found', 'There is no page at this address.');
    const text = (name: string) => (typeof req.query[name] === 'string' ? req.query[name] : undefined);
    const answer = { state: text('state'), code: text('code'), error: text('error') };
    const visitor = visitorOf(res);
    const result = await finishConnection(ctx, network.provider, answer, visitor?.sessionId);
    answerConnection(ctx, res, network, result);
  });
  return router;
}

/** The words for an account without a channel, with where to make one when the network has such a page. */
function noChannel(createAt?: string): string {
  const where = createAt ? ` at ${createAt}` : '';
  return (
    'The account you signed in with has no channel there, so nothing was connected. ' +
    `Create one with that account${where}, then connect again.`
  );
}

const FAILURES: Record<ConnectionFailure, string> = {
  unknown:
    'That answer of the network belongs to no connection in progress ' +
    '(it was finished already, or started elsewhere); nothing was connected.',
  expired: 'The connection took too long; nothing was connected. Start it again.',
  other_session: 'The connection was started in another browser session; nothing was connected. Start it again here.',
  denied: 'Access was not allowed on the network; nothing was connected.',
  refused:
    'The network refused the connection; nothing was connected. Start it again, and allow every access asked for.',
  no_channel: noChannel(),
  unreachable:
    'The network could not be reached to finish the connection; nothing was connected. Try again in a moment.',
  none_chosen: 'No account was chosen, so nothing was connected. Connect again to choose one.',
};

const NOTICES = {
  added: 'The sandbox channel is added.',
  connected: 'The account is connected.',
  reconnected: 'The account is connected again; its channel is active.',
  several_connected: 'The accounts you chose are connected.',
  several_reconnected: 'The accounts you chose are connected again; their channels are active.',
  removed: 'The channel is removed; its scheduled and failed posts are drafts now.',
  enabled: 'The channel is enabled.',
  disabled: 'The channel is disabled: it takes no new posts, and its scheduled posts fail at their time.',
  origin_added: 'The return origin is added.',
  origin_removed: 'The return origin is removed.',
} as const;

/** The site a channel's account lives on, from its stored credentials; '' when it has none. */
async function siteOfChannel(
  ctx: PostsContext,
  organizationId: string,
  provider: Provider,
  id: string,
): Promise<string> {
  const channel = await findChannel(ctx.db, organizationId, id);
  return (channel?.provider === provider && channelCredentials(ctx.keyring, channel)?.site) || '';
}

/** The account name of one of the organization's channels, to sign it in again; `undefined` when there is none. */
async function accountOfChannel(ctx: PostsContext, organizationId: string, id: string): Promise<string | undefined> {
  if (!id) return undefined;
  return (await findChannel(ctx.db, organizationId, id))?.username ?? undefined;
}

/** The network through which a channel is connected again (Facebook for an Instagram account linked to a Page). */
function reconnectVia(ctx: PostsContext, channel: Channel): Provider {
  if (channel.provider !== 'instagram' || channel.status === 'removed') return channel.provider;
  return connectedThrough(channel.provider, channelCredentials(ctx.keyring, channel));
}

/** The origin of an account's picture, when it is an https URL a page may show. */
function pictureOrigin(picture: string | null): string[] {
  if (!picture || !URL.canParse(picture)) return [];
  const url = new URL(picture);
  return url.protocol === 'https:' ? [url.origin] : [];
}
