import express, { type Request, type Response, type Router } from 'express';
import { DomainError, ValidationError } from '../core/errors.js';
import type { AppContext } from '../http/context.js';
import { formatTime } from '../pages/forms.js';
import { pageHtml, renderPage } from '../pages/render.js';
import { field } from '../pages/visitor.js';
import { toDeliveryBody } from '../webhooks/delivery-body.js';
import { findEndpoint, listEndpoints, MAX_ENDPOINTS, toWebhookBody, type WebhookOwner } from '../webhooks/endpoints.js';
import type { WebhookManagement } from '../webhooks/management.js';
import { signedIn } from './signed-in.js';
import { zoneOf } from './time-zone.js';

/** The event types a user can subscribe an endpoint to, in words. */
const EVENT_TYPES = [
  { type: 'post.scheduled', words: 'A post is scheduled' },
  { type: 'post.publishing', words: 'A post is being published' },
  { type: 'post.published', words: 'A post is published' },
  { type: 'post.failed', words: 'A post failed' },
  { type: 'post.deleted', words: 'A post is deleted' },
  { type: 'post.pending_approval', words: 'A post waits for approval' },
  { type: 'post.approved', words: 'A post is approved' },
  { type: 'post.rejected', words: 'A post is rejected' },
  { type: 'channel.connected', words: 'A channel is connected' },
  { type: 'channel.needs_reconnect', words: 'A channel needs to be connected again' },
  { type: 'channel.expiring', words: 'A channel’s access ends within a week' },
] as const;

const NOTICES = {
  deleted: 'The endpoint is deleted.',
  updated: 'The endpoint is saved.',
  tested: 'A test event is on its way; it shows below in a moment.',
  retried: 'The delivery is on its way again.',
} as const;

const DESCRIPTION_MAX = 200;

/**
 * Settings → Webhooks: the organization's endpoints (those its OAuth apps created too), created with
 * their secret shown once; per endpoint, its settings, a test event, the secret's rotation, and its
 * recent deliveries with a Retry button. The same rules as the Public API's webhook operations.
 */
export function webhooksPage(ctx: AppContext & { webhooks: WebhookManagement }): Router {
  const router = express.Router();
  const view = new WebhooksView(ctx);
  // A refusal of a change to an endpoint is shown on the endpoint's page, or on the list when it is gone.
  const onEndpoint = (res: Response, id: string) => (problem: string, status: number) =>
    view.endpoint(res, id, { problem }, status).catch(() => view.list(res, { problem }, status));

  router.get('/settings/webhooks', async (req, res) => {
    const notice = noticeOf(req);
    await view.list(res, notice ? { notice } : {});
  });

  router.post('/settings/webhooks', async (req, res) => {
    let form = { url: field(req, 'url'), description: field(req, 'description'), eventTypes: [] as string[] };
    await attempt(
      async () => {
        const input = formOf(req);
        form = { ...input, description: input.description ?? '' };
        const { row, secret } = await ctx.webhooks.create(ownerOf(res), input);
        await view.list(res, { created: { url: row.url, secret } }, 201);
      },
      (problem, status) => view.list(res, { problem, form }, status),
    );
  });

  router.get('/settings/webhooks/:id', async (req, res) => {
    const notice = noticeOf(req);
    await attempt(
      () => view.endpoint(res, req.params.id, notice ? { notice } : {}),
      (problem, status) => view.list(res, { problem }, status),
    );
  });

  // The page's script asks for the deliveries again while it is open, and shows them when they changed.
  router.get('/settings/webhooks/:id/deliveries', async (req, res) => {
    await view.deliveryList(res, req.params.id);
  });

  router.post('/settings/webhooks/:id', async (req, res) => {
    const id = req.params.id;
    await attempt(
      async () => {
        const input = formOf(req);
        await ctx.webhooks.update(ownerOf(res), id, { ...input, enabled: field(req, 'enabled') === 'on' });
        res.redirect(303, `/settings/webhooks/${id}?done=updated`);
      },
      onEndpoint(res, id),
    );
  });

  router.post('/settings/webhooks/:id/:action', async (req, res) => {
    const { id, action } = req.params;
    await attempt(
      () => endpointAction(ctx, view, res, id, action),
      (problem, status) => view.list(res, { problem }, status),
    );
  });

  router.post('/settings/webhooks/:id/deliveries/:deliveryId/retry', async (req, res) => {
    const { id, deliveryId } = req.params;
    await attempt(
      async () => {
        await ctx.webhooks.retry(ownerOf(res), id, deliveryId);
        res.redirect(303, `/settings/webhooks/${id}?done=retried`);
      },
      onEndpoint(res, id),
    );
  });

  return router;
}

/** The buttons of an endpoint's page: send a test event, rotate the secret, delete the endpoint. */
async function endpointAction(
  ctx: { webhooks: WebhookManagement },
  view: WebhooksView,
  res: Response,
  id: string,
  action: string,
): Promise<unknown> {
  const owner = ownerOf(res);
  if (action === 'test') {
    await ctx.webhooks.test(owner, id);
    return res.redirect(303, `/settings/webhooks/${id}?done=tested`);
  }
  if (action === 'rotate') {
    const { secret } = await ctx.webhooks.rotate(owner, id);
    return view.endpoint(res, id, { secret });
  }
  if (action === 'delete') {
    await ctx.webhooks.remove(owner, id);
    return res.redirect(303, '/settings/webhooks?done=deleted');
  }
  return view.list(res, { problem: 'There is no such action.' }, 404);
}

const ownerOf = (res: Response): WebhookOwner => {
  const { organization, visitor } = signedIn(res);
  return { organizationId: organization.id, appId: null, actor: { user: visitor.user.id } };
};

/** The notice of a change just done, named by the redirect's `done`. */
function noticeOf(req: Request): string | undefined {
  const done = req.query.done;
  return typeof done === 'string' && done in NOTICES ? NOTICES[done as keyof typeof NOTICES] : undefined;
}

/** Runs a change; a refusal is shown on the page it came from, with the status it has in the API. */
async function attempt(
  change: () => Promise<unknown>,
  onProblem: (problem: string, status: number) => Promise<void>,
): Promise<void> {
  try {
    await change();
  } catch (error) {
    if (!(error instanceof DomainError) || error.status >= 500) throw error;
    await onProblem(error.message, error.status);
  }
}

/** The endpoint form's fields, checked as the contract checks them. */
function formOf(req: Request): { url: string; description: string | null; eventTypes: string[] } {
  const url = field(req, 'url').trim();
  const description = field(req, 'description').trim();
  const body = req.body as Record<string, unknown>;
  const chosen = ([] as unknown[])
    .concat(body.eventTypes ?? [])
    .filter((type): type is string => typeof type === 'string');
  const eventTypes = EVENT_TYPES.map((e) => e.type).filter((type) => chosen.includes(type));
  if (!URL.canParse(url))
    throw new ValidationError('Enter the receiver’s URL, starting with https:// or http://.', [
      { path: 'url', message: 'not a URL' },
    ]);
  if (url.length > 2000)
    throw new ValidationError('A webhook URL has at most 2000 characters.', [{ path: 'url', message: 'too long' }]);
  if (description.length > DESCRIPTION_MAX)
    throw new ValidationError(`A description has at most ${DESCRIPTION_MAX} characters.`, [
      { path: 'description', message: 'too long' },
    ]);
  if (eventTypes.length === 0)
    throw new ValidationError('Choose at least one event to send.', [{ path: 'eventTypes', message: 'none chosen' }]);
  return { url, description: description === '' ? null : description, eventTypes };
}

/** The two pages: the list of endpoints with the form of a new one, and one endpoint with its deliveries. */
class WebhooksView {
  constructor(private readonly ctx: AppContext & { webhooks: WebhookManagement }) {}

  async list(
    res: Response,
    extra: { notice?: string; problem?: string; created?: { url: string; secret: string }; form?: object } = {},
    status = 200,
  ): Promise<void> {
    const rows = await listEndpoints(this.ctx.db, ownerOf(res));
    const apps = await this.appNames(rows.flatMap((row) => (row.app_id ? [row.app_id] : [])));
    renderPage(
      res,
      '/web/templates/webhooks',
      {
        title: 'Webhooks',
        path: '/settings/webhooks',
        endpoints: rows.map((row) => ({
          ...toWebhookBody(row, this.ctx.clock.now()),
          app: row.app_id ? (apps.get(row.app_id) ?? 'an app') : null,
        })),
        eventTypes: EVENT_TYPES,
        max: MAX_ENDPOINTS,
        form: { url: '', description: '', eventTypes: ['post.published', 'post.failed'] },
        ...extra,
      },
      status,
    );
  }

  async endpoint(
    res: Response,
    id: string,
    extra: { notice?: string; problem?: string; secret?: string } = {},
    status = 200,
  ): Promise<void> {
    const row = await findEndpoint(this.ctx.db, ownerOf(res), id);
    renderPage(
      res,
      '/web/templates/webhook',
      {
        title: `Webhook ${row.url}`,
        path: '/settings/webhooks',
        endpoint: toWebhookBody(row, this.ctx.clock.now()),
        eventTypes: EVENT_TYPES,
        scripts: ['webhook.js'],
        ...(await this.recentDeliveries(res, id)),
        ...extra,
      },
      status,
      { connectOrigins: [] },
    );
  }

  /** The endpoint's recent deliveries alone, as its page shows them: what its script puts in their place. */
  async deliveryList(res: Response, id: string): Promise<void> {
    const row = await findEndpoint(this.ctx.db, ownerOf(res), id);
    const html = pageHtml(
      res,
      '/web/templates/webhook-deliveries',
      { title: '', endpoint: toWebhookBody(row, this.ctx.clock.now()), ...(await this.recentDeliveries(res, id)) },
      { connectOrigins: [] },
    );
    res.type('html').send(html);
  }

  /** The 20 newest deliveries, their times in the reader's zone, and a version that changes when any of them does. */
  private async recentDeliveries(res: Response, id: string) {
    const { items } = await this.ctx.webhooks.deliveries(ownerOf(res), id, { limit: 20, cursor: undefined });
    const deliveries = items.map((delivery) => ({
      ...toDeliveryBody(delivery),
      createdText: formatTime(delivery.created_at, zoneOf(res)),
      nextText: delivery.next_attempt_at ? formatTime(delivery.next_attempt_at, zoneOf(res)) : null,
    }));
    const deliveriesVersion = deliveries
      .map((d) => [d.id, d.status, d.attempts, d.lastStatusCode ?? '', d.nextText ?? ''].join(':'))
      .join(' ');
    return { deliveries, deliveriesVersion };
  }

  private async appNames(ids: string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const apps = await this.ctx.db.selectFrom('oauth_apps').select(['id', 'name']).where('id', 'in', ids).execute();
    return new Map(apps.map((app) => [app.id, app.name]));
  }
}
