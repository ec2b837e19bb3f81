import express, { type Router } from 'express';
import type { ChannelRemoval } from '../channels/removal.js';
import type { PostsContext } from '../posts/context.js';
import type { CsrfTokens } from '../pages/csrf.js';
import { apiKeyPages } from './api-key-pages.js';
import { appPages } from './app-pages.js';
import { auditLogPage } from './audit-log-page.js';
import { approvedAppsPage } from './approved-apps-page.js';
import { channelsPage } from './channels-page.js';
import { membersPage } from './members-page.js';
import { organizationPages } from './organization-pages.js';
import { schedulePages } from './schedule-pages.js';
import { requirePermission, requireSignIn } from './signed-in.js';
import { webhooksPage } from './webhooks-page.js';
import type { WebhookManagement } from '../webhooks/management.js';

const CHANGES = { changesOnly: true };

/**
 * Settings → Channels, Members, Audit log, Webhooks, Developers → Access and Apps, and Approved apps:
 * signed-in users only.
 */
export function settingsPages(
  ctx: PostsContext & { webhooks: WebhookManagement },
  csrf: CsrfTokens,
  channelRemoval: ChannelRemoval,
): Router {
  const router = express.Router();
  router.use('/settings', requireSignIn(csrf));
  router.use('/settings/developers', requirePermission('developers:manage', 'manage API keys and apps'));
  router.use('/settings/approved-apps', requirePermission('developers:manage', 'manage the approved apps'));
  router.use('/settings/audit-log', requirePermission('audit:read', 'read the audit log'));
  router.use('/settings/webhooks', requirePermission('webhooks:write', 'manage webhooks'));
  router.use('/settings/channels', requirePermission('channels:write', 'connect or remove channels', CHANGES));
  router.use(
    '/settings/organization',
    requirePermission('channels:write', "change the organization's time zone", CHANGES),
  );
  router.get('/settings', (_req, res) => res.redirect(302, '/settings/channels'));
  router.get('/settings/developers', (_req, res) => res.redirect(302, '/settings/developers/access'));
  router.use(apiKeyPages(ctx));
  router.use(auditLogPage(ctx));
  router.use(appPages(ctx));
  router.use(approvedAppsPage(ctx));
  // Before the channels' pages, whose `/settings/channels/:id/:action` would take the schedule's form.
  router.use(schedulePages(ctx));
  router.use(channelsPage(ctx, channelRemoval));
  router.use(membersPage(ctx));
  router.use(organizationPages(ctx));
  router.use(webhooksPage(ctx));
  return router;
}
