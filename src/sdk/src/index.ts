/**
 * `@service/sdk`: the typed Node client of the post-scheduling service's Public API.
 *
 * @example
 * ```ts
 * import Service, { ServiceError, type TikTokSettings } from '@service/sdk';
 *
 * const service = new Service(process.env.SERVICE_API_KEY!);
 * const { organization } = await service.isConnected();
 * ```
 *
 * @packageDocumentation
 */
import Service from './client.js';

export default Service;
export { Service };
export { DEFAULT_ORIGIN } from './client.js';
export type { CreatePostOptions, RequestOptions, ServiceOptions, UploadOptions } from './client.js';
export { ServiceError } from './errors.js';
export { verifyWebhook, WebhookVerificationError } from './webhooks.js';
export type { WebhookHeaders } from './webhooks.js';
export type { FailedRequest } from './errors.js';
export type * from './types.js';
/** The types generated from the contract, for calling the API with `openapi-fetch` directly. */
export type { components, operations, paths } from './spec.js';
