import express, { type Request, type Response, type Router } from 'express';
import { formExpired, renderErrorPage, renderPage } from '../pages/render.js';
import { anonymousFormToken, field, verifyAnonymousForm, visitorOf } from '../pages/visitor.js';
import { connectionAwaitingSignIn, finishSignIn } from '../providers/account-connections.js';
import type { SignInConnection, SignInField } from '../providers/connection-contract.js';
import type { ProviderAdapter } from '../providers/provider-adapter.js';
import { allNetworks, type ProvidersContext } from '../providers/registry.js';
import { answerConnection } from './connection-outcome.js';
import type { PageTools } from './page-tools.js';

/** The networks whose users sign in on a page of this server (Bluesky's app passwords). */
function signInNetwork(
  ctx: ProvidersContext,
  provider: unknown,
): (ProviderAdapter & { connection: SignInConnection }) | undefined {
  return allNetworks(ctx.providers).find(
    (n): n is ProviderAdapter & { connection: SignInConnection } =>
      n.provider === provider && n.connection?.kind === 'sign-in',
  );
}

/**
 * Where the user of a network without a consent page signs in with a password they made for this
 * service: connections started in the web app and through the Public API alike (the connection's
 * `state` in the address names it; the browser session that started one in the web app must be the
 * one that finishes it). The password goes to the network and, encrypted, to the channel's
 * credentials; it is never shown again, not even on the page that refuses it.
 */
export function channelSignInPages(ctx: ProvidersContext, tools: PageTools): Router {
  const router = express.Router();
  const showForm = async (
    req: Request,
    res: Response,
    network: ProviderAdapter & { connection: SignInConnection },
    fields: { state: string; account: string; server: string },
    problem?: { message: string; field?: SignInField; retryAfter?: number },
  ) => {
    if (problem?.retryAfter !== undefined) res.setHeader('Retry-After', String(problem.retryAfter));
    return renderPage(
      res,
      '/web/templates/channel-sign-in',
      {
        title: `Connect ${network.name}`,
        network: network.name,
        provider: network.provider,
        form: network.connection.form,
        ...fields,
        problem,
        csrfToken: await anonymousFormToken(req, res, tools.cookies, tools.csrf),
      },
      problem?.retryAfter !== undefined ? 429 : problem ? 422 : 200,
    );
  };
  const unknown = (res: Response) =>
    renderErrorPage(
      res,
      400,
      'This connection cannot go on',
      'It is unknown, it took too long, or it was finished already. Start connecting the account again.',
    );

  router.get('/channels/sign-in/:provider', async (req, res) => {
    const network = signInNetwork(ctx, req.params.provider);
    const text = (name: string) => (typeof req.query[name] === 'string' ? req.query[name] : '');
    if (!network) return renderErrorPage(res, 404, 'Not found', 'There is no page at this address.');
    if (!text('state') || !(await connectionAwaitingSignIn(ctx, network.provider, text('state')))) return unknown(res);
    await showForm(req, res, network, { state: text('state'), account: text('account'), server: '' });
  });

  router.post('/channels/sign-in/:provider', async (req, res) => {
    // A form that is not this site's is refused before anything is looked up, as on every page.
    if (!(await verifyAnonymousForm(req, tools.cookies, tools.csrf))) return formExpired(res);
    const network = signInNetwork(ctx, req.params.provider);
    if (!network) return renderErrorPage(res, 404, 'Not found', 'There is no page at this address.');
    const fields = { state: field(req, 'state'), account: field(req, 'account'), server: field(req, 'server') };
    const result = await finishSignIn(
      ctx,
      network.provider,
      fields.state,
      { account: fields.account, password: field(req, 'password'), server: fields.server },
      visitorOf(res)?.sessionId,
    );
    if ('retry' in result)
      return showForm(req, res, network, fields, {
        message: result.retry,
        field: result.field,
        retryAfter: result.retryAfter,
      });
    if (!result.ok && result.failure === 'unknown') return unknown(res);
    answerConnection(ctx, res, network, result);
  });
  return router;
}
