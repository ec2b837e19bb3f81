import { Webhook } from 'standardwebhooks';
import type { Keyring } from '../crypto/keyring.js';
import type { OutboundClient } from '../net/outbound-client.js';
import type { WebhookDelivery } from './deliveries.js';
import { signingSecrets, type WebhookEndpoint } from './endpoints.js';

/** A receiver has this long to answer. */
export const TIMEOUT_SECONDS = 10;
/** What is kept of a receiver's answer, for the deliveries list. */
const RESPONSE_KEPT_BYTES = 1024;

/** One attempt to send a delivery: how the receiver answered, or why it did not. */
export interface Attempt {
  ok: boolean;
  statusCode: number | null;
  durationMs: number;
  body: string | null;
  error: string | null;
}

/**
 * POSTs a delivery to its endpoint, signed per the Standard Webhooks specification (with the previous
 * secret too during a rotation's overlap), through the outbound client that refuses private addresses
 * (unless the operator allowed their ranges), no redirect followed, 10 seconds to answer. A 2xx is a
 * success.
 */
export async function sendSigned(
  outbound: OutboundClient,
  keyring: Keyring,
  endpoint: WebhookEndpoint,
  delivery: WebhookDelivery,
  now: Date,
): Promise<Attempt> {
  const signatures = signingSecrets(keyring, endpoint, now).map((secret) =>
    new Webhook(secret).sign(delivery.id, now, delivery.payload),
  );
  const started = performance.now();
  try {
    const answer = await outbound.call(endpoint.url, {
      method: 'POST',
      trusted: false,
      headers: {
        'Content-Type': 'application/json',
        'User-Agent': 'post-scheduler-webhooks',
        'webhook-id': delivery.id,
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': signatures.join(' '),
      },
      body: delivery.payload,
      timeoutSeconds: TIMEOUT_SECONDS,
      maxResponseBytes: RESPONSE_KEPT_BYTES,
    });
    const durationMs = Math.round(performance.now() - started);
    const body = answer.body.toString('utf8').replaceAll('\u0000', '');
    const ok = answer.status >= 200 && answer.status <= 299;
    return {
      ok,
      statusCode: answer.status,
      durationMs,
      body,
      error: ok ? null : failureOf(answer.status, answer.headers.location),
    };
  } catch (error) {
    const durationMs = Math.round(performance.now() - started);
    const reason = (error as { details?: { message: string }[] }).details?.[0]?.message;
    const why =
      reason ??
      ((error as Error).name === 'TimeoutError' || (error as Error).name === 'AbortError'
        ? `no answer within ${TIMEOUT_SECONDS} seconds`
        : `no answer (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
    return { ok: false, statusCode: null, durationMs, body: null, error: why };
  }
}

/**
 * Why an answer other than 2xx failed the attempt. A redirect is never followed (it could lead to an
 * address the endpoint's checks would refuse, and a signed event belongs to the URL registered for
 * it), so the answer says where it pointed, for the receiver's owner to register that URL instead.
 */
function failureOf(status: number, location: string | undefined): string {
  if (status < 300 || status > 399 || !location) return `the receiver answered ${status}`;
  const target = location.length > 200 ? `${location.slice(0, 200)}…` : location;
  return (
    `the receiver answered ${status}, a redirect to ${target}, which is not followed: ` +
    'register the URL that answers'
  );
}
