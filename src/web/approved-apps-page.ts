import express, { type Router } from 'express';
import type { AppContext } from '../http/context.js';
import { listApprovedApps, revokeGrant, type ApprovedApp } from '../oauth/grants.js';
import { formatTime } from '../pages/forms.js';
import { renderPage } from '../pages/render.js';
import { signedIn } from './signed-in.js';
import { zoneOf } from './time-zone.js';

/** Settings → Approved apps: the apps approved for each of the user's organizations, with Revoke. */
export function approvedAppsPage(ctx: AppContext): Router {
  const router = express.Router();

  router.get('/settings/approved-apps', async (_req, res) => {
    const { visitor } = signedIn(res);
    const approved = await listApprovedApps(ctx.db, visitor.user.id);
    const groups: {
      organizationId: string;
      organizationName: string;
      apps: (ApprovedApp & { approvedText: string; lastUsedText: string })[];
    }[] = [];
    for (const app of approved) {
      let group = groups.find((g) => g.organizationId === app.organizationId);
      if (!group)
        groups.push((group = { organizationId: app.organizationId, organizationName: app.organizationName, apps: [] }));
      group.apps.push({
        ...app,
        approvedText: formatTime(app.approvedAt, zoneOf(res)),
        lastUsedText: app.lastUsedAt ? `last used ${formatTime(app.lastUsedAt, zoneOf(res))}` : 'not used yet',
      });
    }
    renderPage(res, '/web/templates/approved-apps', {
      title: 'Approved apps',
      path: '/settings/approved-apps',
      groups,
    });
  });

  router.post('/settings/approved-apps/:grantId/revoke', async (req, res) => {
    const { visitor } = signedIn(res);
    await revokeGrant(ctx.db, visitor.user.id, req.params.grantId);
    res.redirect(303, '/settings/approved-apps');
  });

  return router;
}
