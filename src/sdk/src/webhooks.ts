import { Webhook, WebhookVerificationError as SignatureError } from 'standardwebhooks';
import { ServiceError } from './errors.js';
import type { WebhookEvent } from './types.js';

/** The headers of a webhook request, as Node's `IncomingMessage`, a fetch `Headers`, or a plain object. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

/**
 * A webhook request that did not verify: a missing or wrong signature, a timestamp more than five
 * minutes from this machine's clock (a replay), or a body that is not an event. Answer it with 400
 * and do not act on it.
 */
export class WebhookVerificationError extends ServiceError {
  constructor(message: string, cause?: unknown) {
    super({
      status: 400,
      code: 'invalid_webhook',
      message,
      details: [],
      requestId: undefined,
      retryAfter: undefined,
      headers: {},
      request: { method: 'POST', url: '', headers: {} },
      ...(cause === undefined ? {} : { cause }),
    });
    this.name = 'WebhookVerificationError';
  }
}

const SIGNED_HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

/**
 * Verifies a webhook request this service sent, per the Standard Webhooks specification, and
 * returns its event. Pass the body exactly as received (the raw bytes or string, not parsed JSON),
 * the request's headers, and the endpoint's secret (`whsec_…`); during a rotation, pass both the
 * new and the old secret. Throws {@link WebhookVerificationError} when it does not verify.
 *
 * @example
 * ```ts
 * app.post('/hooks', express.raw({ type: 'application/json' }), (req, res) => {
 *   const event = verifyWebhook(req.body, req.headers, process.env.WEBHOOK_SECRET!);
 *   if (event.type === 'post.published') console.log(event.data.releaseUrl);
 *   res.sendStatus(204);
 * });
 * ```
 */
export function verifyWebhook(
  payload: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string | string[],
): WebhookEvent {
  const signed: Record<string, string> = {};
  for (const name of SIGNED_HEADERS) {
    const value = headers instanceof Headers ? headers.get(name) : headerOf(headers, name);
    if (!value)
      throw new WebhookVerificationError(`The request has no ${name} header: it is not a webhook of this service.`);
    signed[name] = value;
  }
  const body = typeof payload === 'string' ? payload : new TextDecoder().decode(payload);
  const secrets = Array.isArray(secret) ? secret : [secret];
  if (secrets.length === 0)
    throw new TypeError('verifyWebhook(payload, headers, secret): give the endpoint’s secret (whsec_…).');
  let failure: unknown;
  for (const candidate of secrets) {
    try {
      const event = new Webhook(candidate).verify(body, signed) as WebhookEvent;
      if (!event || typeof event !== 'object' || typeof event.type !== 'string')
        throw new WebhookVerificationError('The webhook body is not an event.');
      return event;
    } catch (error) {
      if (error instanceof WebhookVerificationError) throw error;
      if (!(error instanceof SignatureError))
        throw new WebhookVerificationError('The webhook body is not JSON.', error);
      failure = error;
    }
  }
  throw new WebhookVerificationError(`The webhook did not verify: ${(failure as Error).message}.`, failure);
}

function headerOf(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const key = Object.keys(headers).find((candidate) => candidate.toLowerCase() === name);
  const value = key === undefined ? undefined : headers[key];
  return Array.isArray(value) ? value[0] : value;
}
