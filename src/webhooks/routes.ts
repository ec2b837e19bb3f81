import type { Db } from '../db/database.js';
import type { Principal } from '../http/principal.js';
import type { PublicHandlers } from '../http/typed-routes.js';
import type { WebhookContext } from './deliveries.js';
import { toDeliveryBody } from './delivery-body.js';
import { findEndpoint, listEndpoints, toWebhookBody, type WebhookOwner } from './endpoints.js';
import type { WebhookManagement } from './management.js';

type WebhookOperations =
  | 'listWebhooks'
  | 'createWebhook'
  | 'getWebhook'
  | 'updateWebhook'
  | 'deleteWebhook'
  | 'testWebhook'
  | 'rotateWebhookSecret'
  | 'listWebhookDeliveries'
  | 'retryWebhookDelivery';

/** An API key manages all the organization's endpoints; an OAuth app's token those of its app. */
async function ownerOf(db: Db, principal: Principal): Promise<WebhookOwner> {
  const actor = { credential: principal.credential };
  if (principal.credential.type !== 'oauth_token')
    return { organizationId: principal.organizationId, appId: null, actor };
  const token = await db
    .selectFrom('oauth_tokens')
    .select('app_id')
    .where('id', '=', principal.credential.id)
    .executeTakeFirstOrThrow();
  return { organizationId: principal.organizationId, appId: token.app_id, actor };
}

export function webhookOperations(
  ctx: WebhookContext,
  webhooks: WebhookManagement,
): Pick<PublicHandlers, WebhookOperations> {
  return {
    listWebhooks: async ({ principal }) => {
      const rows = await listEndpoints(ctx.db, await ownerOf(ctx.db, principal));
      return { status: 200, body: { data: rows.map((row) => toWebhookBody(row, ctx.clock.now())) } };
    },

    createWebhook: async ({ principal, body }) => {
      const { row, secret } = await webhooks.create(await ownerOf(ctx.db, principal), {
        url: body.url,
        eventTypes: body.eventTypes,
        description: body.description || null,
      });
      return { status: 201, body: { ...toWebhookBody(row, ctx.clock.now()), secret } };
    },

    getWebhook: async ({ principal, params }) => {
      const row = await findEndpoint(ctx.db, await ownerOf(ctx.db, principal), params.id);
      return { status: 200, body: toWebhookBody(row, ctx.clock.now()) };
    },

    updateWebhook: async ({ principal, params, body }) => {
      const { description, ...changes } = body;
      const row = await webhooks.update(await ownerOf(ctx.db, principal), params.id, {
        ...changes,
        ...(description !== undefined ? { description: description || null } : {}),
      });
      return { status: 200, body: toWebhookBody(row, ctx.clock.now()) };
    },

    deleteWebhook: async ({ principal, params }) => {
      await webhooks.remove(await ownerOf(ctx.db, principal), params.id);
      return { status: 204 };
    },

    testWebhook: async ({ principal, params }) => {
      return { status: 202, body: toDeliveryBody(await webhooks.test(await ownerOf(ctx.db, principal), params.id)) };
    },

    rotateWebhookSecret: async ({ principal, params }) => {
      const { row, secret } = await webhooks.rotate(await ownerOf(ctx.db, principal), params.id);
      return { status: 200, body: { secret, previousSecretExpiresAt: row.previous_secret_expires_at!.toISOString() } };
    },

    listWebhookDeliveries: async ({ principal, params, query }) => {
      const owner = await ownerOf(ctx.db, principal);
      const page = { limit: query.limit ?? 20, cursor: query.cursor };
      const { items, nextCursor } = await webhooks.deliveries(owner, params.id, page);
      return { status: 200, body: { data: items.map(toDeliveryBody), nextCursor } };
    },

    retryWebhookDelivery: async ({ principal, params }) => {
      return {
        status: 202,
        body: toDeliveryBody(await webhooks.retry(await ownerOf(ctx.db, principal), params.id, params.deliveryId)),
      };
    },
  };
}
