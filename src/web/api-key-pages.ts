import express, { type Response, type Router } from 'express';
import { createApiKey, listApiKeys, maskApiKey, revokeApiKey } from '../accounts/api-keys.js';
import { includesRole, isRole, ROLE_DESCRIPTIONS, ROLES } from '../core/roles.js';
import type { AppContext } from '../http/context.js';
import { formatTime } from '../pages/forms.js';
import { renderPage } from '../pages/render.js';
import { field } from '../pages/visitor.js';
import { confirmedOrAsk } from './confirm-first.js';
import { signedIn } from './signed-in.js';
import { zoneOf } from './time-zone.js';

/** Settings → Developers → Access: the organization's API keys. */
export function apiKeyPages(ctx: AppContext): Router {
  const router = express.Router();

  const showAccess = async (res: Response, extra: object = {}, status = 200) => {
    const { organization } = signedIn(res);
    const keys = await listApiKeys(ctx.db, organization.id);
    const zone = zoneOf(res);
    const roles = ROLES.filter((role) => includesRole(organization.role, role));
    renderPage(
      res,
      '/web/templates/developers-access',
      {
        title: 'API keys',
        path: '/settings/developers/access',
        roles: roles.map((role) => ({ role, description: ROLE_DESCRIPTIONS[role] })),
        keys: keys.map((key) => ({
          id: key.id,
          name: key.name,
          masked: maskApiKey(key),
          role: key.role ?? 'owner',
          createdBy: key.created_by_email,
          createdAt: key.created_at.toISOString(),
          createdAtText: formatTime(key.created_at, zone),
          lastUsedText: formatTime(key.last_used_at, zone, 'never used'),
          revoked: key.revoked_at !== null,
          revokedAtText: formatTime(key.revoked_at, zone),
        })),
        ...extra,
      },
      status,
    );
  };

  router.get('/settings/developers/access', (_req, res) => showAccess(res));

  router.post('/settings/developers/access', async (req, res) => {
    const { organization, visitor, actor } = signedIn(res);
    // Without a choice the key acts with its maker's role.
    const role = field(req, 'role') || organization.role;
    if (!isRole(role)) {
      return showAccess(res, { errors: { role: 'Choose the role the key acts with.' } }, 400);
    }
    const { secret, apiKey } = await createApiKey(ctx.db, organization.id, field(req, 'name').slice(0, 100), {
      maker: { ...actor, userId: visitor.user.id },
      role,
    });
    await showAccess(res, { newKey: { name: apiKey.name, secret } }, 201);
  });

  router.post('/settings/developers/access/:keyId/revoke', async (req, res) => {
    const { organization, visitor } = signedIn(res);
    const key = (await listApiKeys(ctx.db, organization.id)).find((candidate) => candidate.id === req.params.keyId);
    const confirmation = {
      question: `Revoke the key ${key?.name ?? ''}?`.replace(' ?', '?'),
      consequence: 'Every request made with it is refused from now on. This cannot be undone.',
      button: 'Revoke the key',
      back: '/settings/developers/access',
      path: '/settings/developers/access',
    };
    if (key && key.revoked_at === null && !confirmedOrAsk(req, res, confirmation)) return;
    await revokeApiKey(ctx.db, organization.id, req.params.keyId, ctx.clock.now(), { user: visitor.user.id });
    res.redirect(303, '/settings/developers/access');
  });

  return router;
}
