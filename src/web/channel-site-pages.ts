import express, { type Response, type Router } from 'express';
import { formExpired, renderErrorPage, renderPage } from '../pages/render.js';
import { anonymousFormToken, field, verifyAnonymousForm } from '../pages/visitor.js';
import { chooseSite, connectionAwaitingSite } from '../providers/account-connections.js';
import { siteChoiceOf, SiteRefusedError } from '../providers/connection-contract.js';
import type { ProviderAdapter } from '../providers/provider-adapter.js';
import { allNetworks, type ProvidersContext } from '../providers/registry.js';
import type { PageTools } from './page-tools.js';

/** The networks whose accounts live on servers of their own, which the user names before the consent page. */
export function siteNetwork(ctx: ProvidersContext, provider: unknown): ProviderAdapter | undefined {
  return allNetworks(ctx.providers).find((n) => n.provider === provider && siteChoiceOf(n.connection) !== undefined);
}

/**
 * The page that sends the user on to the consent page on the site they named. Forms cannot end up
 * there: the pages allow forms to go to known origins only (their form-action), and a site the user
 * named is none, so this page has its own policy and the user follows a link.
 */
export function renderContinue(
  res: Response,
  network: ProviderAdapter,
  authorizationUrl: string,
  path: string | undefined,
): void {
  renderPage(res, '/web/templates/channel-continue', {
    title: `Continue to ${new URL(authorizationUrl).host}`,
    ...(path ? { path } : {}),
    network: network.name,
    host: new URL(authorizationUrl).host,
    authorizationUrl,
  });
}

/**
 * Where a connection started through the Public API without its site asks the user for it (a
 * Mastodon instance): no session of this server is involved, the connection's `state` in the address
 * names it, and the form carries a token bound to this browser.
 */
export function channelSitePages(ctx: ProvidersContext, tools: PageTools): Router {
  const router = express.Router();
  const showForm = async (
    req: express.Request,
    res: Response,
    network: ProviderAdapter,
    state: string,
    problem?: { message: string; site: string },
  ) =>
    renderPage(
      res,
      '/web/templates/channel-site',
      {
        title: `Connect ${network.name}`,
        network: network.name,
        provider: network.provider,
        label: siteChoiceOf(network.connection)!.label,
        example: siteChoiceOf(network.connection)!.example,
        state,
        site: problem?.site ?? '',
        problem: problem?.message,
        csrfToken: await anonymousFormToken(req, res, tools.cookies, tools.csrf),
      },
      problem ? 422 : 200,
    );
  const unknown = (res: Response) =>
    renderErrorPage(
      res,
      400,
      'This connection cannot go on',
      'It is unknown, it took too long, or its site was named already. Start connecting the account again.',
    );

  router.get('/channels/site/:provider', async (req, res) => {
    const network = siteNetwork(ctx, req.params.provider);
    const state = typeof req.query.state === 'string' ? req.query.state : '';
    if (!network) return renderErrorPage(res, 404, 'Not found', 'There is no page at this address.');
    if (!state || !(await connectionAwaitingSite(ctx, network.provider, state))) return unknown(res);
    await showForm(req, res, network, state);
  });

  router.post('/channels/site/:provider', async (req, res) => {
    // A form that is not this site's is refused before anything is looked up, as on every page.
    if (!(await verifyAnonymousForm(req, tools.cookies, tools.csrf))) return formExpired(res);
    const network = siteNetwork(ctx, req.params.provider);
    if (!network) return renderErrorPage(res, 404, 'Not found', 'There is no page at this address.');
    const state = field(req, 'state');
    const site = field(req, 'site');
    try {
      const authorizationUrl = await chooseSite(ctx, network.provider, state, site);
      if (!authorizationUrl) return unknown(res);
      renderContinue(res, network, authorizationUrl, undefined);
    } catch (error) {
      if (!(error instanceof SiteRefusedError)) throw error;
      await showForm(req, res, network, state, { message: capitalized(error.message), site });
    }
  });
  return router;
}

export const capitalized = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);
