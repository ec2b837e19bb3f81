import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import express, { type Request, type Response, type Router } from 'express';
import { findOrganization } from '../accounts/organizations.js';
import { deleteAccount, accountDeletionPlan, deleteOrganization } from '../lifecycle/deletion.js';
import { exportCsv, exportJson, isCsvKind } from '../lifecycle/export.js';
import type { MailContext } from '../mail/worker.js';
import type { CsrfTokens } from '../pages/csrf.js';
import { attempt } from '../pages/forms.js';
import { formExpired, renderErrorPage, renderPage } from '../pages/render.js';
import { field, verifySessionForm, visitorOf, type BrowserCookies } from '../pages/visitor.js';
import { requirePermission, signedIn } from './signed-in.js';
import { NotFoundError } from '../core/errors.js';

/** A file name for the download: the organization's name in plain letters, and the day. */
function downloadName(name: string, now: Date, suffix: string): string {
  const slug =
    name
      .normalize('NFKD')
      .replace(/[^A-Za-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .toLowerCase()
      .slice(0, 60) || 'organization';
  return `${slug}-${now.toISOString().slice(0, 10)}-${suffix}`;
}

/** Sends a download a chunk at a time, as the client reads it. */
async function stream(res: Response, type: string, fileName: string, chunks: AsyncIterable<string>): Promise<void> {
  res.setHeader('Content-Type', type);
  res.setHeader('Content-Disposition', `attachment; filename="${fileName}"`);
  res.setHeader('Cache-Control', 'no-store');
  await pipeline(Readable.from(chunks), res);
}

/**
 * Settings → Organization's downloads and deletion: the export of the organization's data (admins and
 * owners) and its deletion (owners, who type its name to confirm).
 */
export function organizationPages(ctx: MailContext): Router {
  const router = express.Router();
  // The page itself is the time zone's (src/web/schedule-pages.ts), which shows these to whom they are for.
  router.use(
    ['/settings/organization/export', '/settings/organization/export.json'],
    requirePermission('organization:export', "export the organization's data"),
  );

  const current = async (res: Response) => {
    const { organization } = signedIn(res);
    const found = await findOrganization(ctx.db, organization.id);
    if (!found) throw new NotFoundError('The organization no longer exists.');
    return found;
  };

  router.get('/settings/organization/export.json', async (_req, res) => {
    const organization = await current(res);
    const now = ctx.clock.now();
    await stream(
      res,
      'application/json; charset=utf-8',
      downloadName(organization.name, now, 'export.json'),
      exportJson(ctx.db, organization, now),
    );
  });

  router.get('/settings/organization/export/:kind.csv', async (req, res) => {
    const kind = req.params.kind;
    if (!isCsvKind(kind)) return renderErrorPage(res, 404, 'Not found', 'There is no export of this kind.');
    const organization = await current(res);
    await stream(
      res,
      'text/csv; charset=utf-8; header=present',
      downloadName(organization.name, ctx.clock.now(), `${kind}.csv`),
      exportCsv(ctx.db, organization.id, kind),
    );
  });

  router.use('/settings/organization/delete', requirePermission('organization:own', 'delete the organization'));

  const showDelete = (res: Response, status = 200, extra: object = {}) => {
    const { organization } = signedIn(res);
    renderPage(
      res,
      '/web/templates/organization-delete',
      { title: `Delete ${organization.name}`, path: '/settings/organization', values: {}, ...extra },
      status,
    );
  };

  router.get('/settings/organization/delete', (_req, res) => showDelete(res));

  router.post('/settings/organization/delete', async (req, res) => {
    const { actor, visitor, organization } = signedIn(res);
    const values = { name: field(req, 'name') };
    const deleted = await attempt(() => deleteOrganization(ctx, { ...actor, userId: visitor.user.id }, values.name));
    if (!deleted.ok) {
      const errors = Object.fromEntries(
        Object.entries(deleted.errors).map(([name, message]) => [
          name,
          name === 'name' ? `The name ${message}` : message,
        ]),
      );
      return showDelete(res, deleted.status, { values, errors });
    }
    res.locals.visitor = { ...visitor, organization: undefined };
    renderPage(res, '/web/templates/account-message', {
      title: 'Organization deleted',
      message:
        `${organization.name} is deleted: its posts, channels, media, members, keys, apps and webhooks. ` +
        'The networks are being asked to revoke the access of its channels.',
      link: { href: '/', text: 'Go on' },
    });
  });

  return router;
}

/**
 * Account → Delete my account: what it does to each organization, then the password. Open to a user
 * who belongs to no organization any more, too.
 */
export function accountDeletionPages(ctx: MailContext, cookies: BrowserCookies, csrf: CsrfTokens): Router {
  const router = express.Router();

  const signedInUser = async (req: Request, res: Response) => {
    const visitor = visitorOf(res);
    if (!visitor) {
      res.redirect(req.method === 'GET' ? 302 : 303, '/login?next=%2Faccount%2Fdelete');
      return undefined;
    }
    if (req.method === 'POST' && !(await verifySessionForm(req, visitor, csrf))) {
      formExpired(res);
      return undefined;
    }
    return visitor;
  };

  const showPlan = async (res: Response, userId: string, status = 200, extra: object = {}) => {
    renderPage(
      res,
      '/web/templates/account-delete',
      { title: 'Delete your account', path: '/account', plan: await accountDeletionPlan(ctx.db, userId), ...extra },
      status,
    );
  };

  router.get('/account/delete', async (req, res) => {
    const visitor = await signedInUser(req, res);
    if (visitor) await showPlan(res, visitor.user.id);
  });

  router.post('/account/delete', async (req, res) => {
    const visitor = await signedInUser(req, res);
    if (!visitor) return;
    const deleted = await attempt(() => deleteAccount(ctx, visitor.user.id, field(req, 'password')));
    if (!deleted.ok) {
      const errors = Object.fromEntries(
        Object.entries(deleted.errors).map(([name, message]) => [
          name,
          name === 'password' ? `Your password ${message}` : message,
        ]),
      );
      return showPlan(res, visitor.user.id, deleted.status, { errors });
    }
    // The sessions went with the user; the cookie goes too.
    cookies.clearSession(res);
    res.locals.visitor = undefined;
    renderPage(res, '/web/templates/account-message', {
      title: 'Account deleted',
      message:
        deleted.value.deleted.length > 0
          ? `Your account is deleted, and with it ${deleted.value.deleted.map((o) => o.name).join(', ')}.`
          : 'Your account is deleted.',
      link: { href: '/signup', text: 'Sign up again' },
    });
  });

  return router;
}
