import { isListedReturnOrigin, returnUrlProblem } from '../channels/return-origins.js';
import { UnprocessableError } from '../core/errors.js';
import type { Db } from '../db/database.js';
import type { Principal } from '../http/principal.js';
import type { PublicHandlers } from '../http/typed-routes.js';
import { startConnection } from './account-connections.js';
import { SiteRefusedError } from './connection-contract.js';
import type { ProvidersContext } from './registry.js';

/**
 * Whether the caller may send users back to `url`, and which OAuth app is calling: an app only to
 * its registered redirect URL's origin, an API key to the origins its organization listed.
 */
async function checkReturnUrl(db: Db, principal: Principal, url: URL): Promise<{ appId: string | null }> {
  const problem = returnUrlProblem(url);
  if (problem)
    throw new UnprocessableError(`returnUrl cannot be used: ${problem}.`, [{ path: 'returnUrl', message: problem }]);
  if (principal.credential.type === 'oauth_token') {
    const app = await db
      .selectFrom('oauth_tokens as t')
      .innerJoin('oauth_apps as a', 'a.id', 't.app_id')
      .select(['a.id', 'a.redirect_uri'])
      .where('t.id', '=', principal.credential.id)
      .executeTakeFirstOrThrow();
    const allowed = new URL(app.redirect_uri).origin;
    if (url.origin !== allowed) {
      const message = `an OAuth app may only return to the origin of its registered redirect URL, ${allowed}`;
      throw new UnprocessableError(`returnUrl cannot be used: ${message}.`, [{ path: 'returnUrl', message }]);
    }
    return { appId: app.id };
  }
  if (!(await isListedReturnOrigin(db, principal.organizationId, url.origin))) {
    const where = 'Settings → Channels in the web app';
    const message = `${url.origin} is not one of the organization's return origins (${where})`;
    throw new UnprocessableError(`returnUrl cannot be used: ${message}.`, [{ path: 'returnUrl', message }]);
  }
  return { appId: null };
}

export function channelConnectOperations(ctx: ProvidersContext): Pick<PublicHandlers, 'connectChannel'> {
  return {
    connectChannel: async ({ principal, body }) => {
      const url = URL.parse(body.returnUrl);
      if (!url)
        throw new UnprocessableError('returnUrl is not a URL this server can send a browser to.', [
          { path: 'returnUrl', message: 'not an absolute URL' },
        ]);
      const { appId } = await checkReturnUrl(ctx.db, principal, url);
      const { authorizationUrl, expiresAt } = await startConnection(ctx, {
        organizationId: principal.organizationId,
        provider: body.provider,
        ...(body.instance === undefined ? {} : { site: body.instance }),
        returnTo: {
          url: url.href,
          state: body.state ?? null,
          appId,
          apiKeyId: principal.credential.type === 'api_key' ? principal.credential.id : null,
        },
      }).catch((error: unknown) => {
        if (!(error instanceof SiteRefusedError)) throw error;
        throw new UnprocessableError(`instance cannot be used: ${error.message}.`, [
          { path: 'instance', message: error.message },
        ]);
      });
      return { status: 200, body: { authorizationUrl, expiresAt: expiresAt.toISOString() } };
    },
  };
}
