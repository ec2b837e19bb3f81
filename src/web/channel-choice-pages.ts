import express, { type Request, type Response, type Router } from 'express';
import { formExpired, renderErrorPage, renderPage } from '../pages/render.js';
import { anonymousFormToken, verifyAnonymousForm, visitorOf } from '../pages/visitor.js';
import { chooseAccounts, connectionAwaitingChoice } from '../providers/account-connections.js';
import type { ProviderAdapter } from '../providers/provider-adapter.js';
import { allNetworks, type ProvidersContext } from '../providers/registry.js';
import { answerConnection } from './connection-outcome.js';
import type { PageTools } from './page-tools.js';

/** The networks whose one consent reaches several accounts, among which the user chooses (Facebook's). */
function choiceNetwork(ctx: ProvidersContext, provider: unknown): ProviderAdapter | undefined {
  return allNetworks(ctx.providers).find(
    (n) => n.provider === provider && n.connection?.kind === 'consent' && n.connection.grantedAccounts !== undefined,
  );
}

/**
 * Where the user chooses which of the accounts their consent reached become channels (Facebook's Pages
 * and the Instagram accounts linked to them), between the network's answer and the end of the
 * connection. The connection's `state` in the address names it; one started in the web app is
 * finished only in the browser session that started it; the form carries a token bound to this
 * browser. The tokens stay on the server.
 */
export function channelChoicePages(ctx: ProvidersContext, tools: PageTools): Router {
  const router = express.Router();
  const unknown = (res: Response) =>
    renderErrorPage(
      res,
      400,
      'This connection cannot go on',
      'It is unknown, or its accounts were chosen already. Start connecting the accounts again.',
    );

  router.get('/channels/choose/:provider', async (req: Request, res) => {
    const network = choiceNetwork(ctx, req.params.provider);
    if (!network) return renderErrorPage(res, 404, 'Not found', 'There is no page at this address.');
    const state = typeof req.query.state === 'string' ? req.query.state : '';
    const awaiting = await connectionAwaitingChoice(ctx, network.provider, state, visitorOf(res)?.sessionId);
    if (!awaiting) return unknown(res);
    if ('ok' in awaiting) return answerConnection(ctx, res, network, awaiting);
    const networkName = (provider: string) => allNetworks(ctx.providers).find((n) => n.provider === provider)?.name;
    const accounts = awaiting.accounts.map((account) => ({
      ...account,
      network: networkName(account.provider) ?? account.provider,
      // Only the networks' own https pictures are shown (and allowed by the page's policy).
      picture: account.identity.picture?.startsWith('https://') ? account.identity.picture : null,
    }));
    renderPage(
      res,
      '/web/templates/channel-choice',
      {
        title: `Choose what to connect from ${network.name}`,
        network: network.name,
        provider: network.provider,
        state,
        accounts,
        offered: accounts.some((account) => !account.unavailable),
        csrfToken: await anonymousFormToken(req, res, tools.cookies, tools.csrf),
      },
      200,
      { mediaOrigins: [...new Set(accounts.flatMap((a) => (a.picture ? [new URL(a.picture).origin] : [])))] },
    );
  });

  router.post('/channels/choose/:provider', async (req: Request, res) => {
    // A form that is not this site's is refused before anything is looked up, as on every page.
    if (!(await verifyAnonymousForm(req, tools.cookies, tools.csrf))) return formExpired(res);
    const network = choiceNetwork(ctx, req.params.provider);
    if (!network) return renderErrorPage(res, 404, 'Not found', 'There is no page at this address.');
    const body = req.body as Record<string, unknown>;
    const state = typeof body.state === 'string' ? body.state : '';
    const chosen = [body.account ?? []].flat().filter((key): key is string => typeof key === 'string');
    const result = await chooseAccounts(ctx, network.provider, state, chosen, visitorOf(res)?.sessionId);
    if (!result.ok && result.failure === 'unknown') return unknown(res);
    answerConnection(ctx, res, network, result);
  });
  return router;
}
