import type { TikTokConfig } from '../../core/config.js';
import type { OutboundClient } from '../../net/outbound-client.js';

const TIMEOUT_SECONDS = 60;
const MAX_ANSWER_BYTES = 512 * 1024;

/** TikTok answered with an error in its envelope (`error.code` other than `ok`), or not at all in it. */
export class TikTokError extends Error {
  constructor(
    /** The HTTP status of the answer. */
    readonly status: number,
    /** TikTok's error code (`access_token_invalid`, `rate_limit_exceeded`, `spam_risk_too_many_posts`, …). */
    readonly code: string,
    message: string,
    /** TikTok's reference of the exchange, for its support. */
    readonly logId: string | undefined,
  ) {
    super(message);
    this.name = 'TikTokError';
  }
}

/** TikTok could not be reached, or did not answer in time: the request may or may not have arrived. */
export class TikTokUnreachableError extends Error {
  override name = 'TikTokUnreachableError';
}

/**
 * TikTok's ids are int64 numbers in its JSON (a post's `publicaly_available_post_id`), beyond what a
 * double holds exactly: an integer too large for one is kept as the digits TikTok sent.
 */
function keepLargeIntegers(this: unknown, _key: string, value: unknown, context?: { source?: string }): unknown {
  return typeof value === 'number' && !Number.isSafeInteger(value) && context?.source && /^-?\d+$/.test(context.source)
    ? context.source
    : value;
}

/** What an answer of TikTok's API looks like: `data`, and `error` with `code: "ok"` when it went well. */
interface Envelope<T> {
  data?: T;
  error?: { code?: string; message?: string; log_id?: string };
}

/**
 * The one way this server calls TikTok's API (open.tiktokapis.com): JSON in, TikTok's envelope out,
 * its errors thrown as `TikTokError` with their code and `log_id`, the access token of the account
 * in the `Authorization` header.
 */
export class TikTokApi {
  constructor(
    private readonly config: TikTokConfig,
    private readonly outbound: OutboundClient,
  ) {}

  /** Calls an endpoint (`/v2/…`) with the account's access token; the answer's `data` and `log_id`. */
  async call<T>(
    path: string,
    options: { accessToken: string; body?: unknown; method?: 'GET' | 'POST'; signal?: AbortSignal },
  ): Promise<{ data: T; logId: string | undefined }> {
    const method = options.method ?? 'POST';
    const answer = await this.send(`${this.config.apiUrl}${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${options.accessToken}`,
        ...(method === 'POST' ? { 'Content-Type': 'application/json; charset=UTF-8' } : {}),
      },
      ...(method === 'POST' ? { body: JSON.stringify(options.body ?? {}) } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    let envelope: Envelope<T> | undefined;
    try {
      envelope = JSON.parse(answer.body.toString('utf8'), keepLargeIntegers) as Envelope<T>;
    } catch {
      // Not TikTok's envelope (a proxy's page): the status says it.
    }
    const error = envelope?.error;
    const logId = error?.log_id || undefined;
    if (answer.status === 200 && envelope?.data !== undefined && (error?.code ?? 'ok') === 'ok')
      return { data: envelope.data, logId };
    throw new TikTokError(
      answer.status,
      error?.code || `http_${answer.status}`,
      error?.message || `TikTok answered ${answer.status}`,
      logId,
    );
  }

  /** Sends a request, through the outbound client; `TikTokUnreachableError` when no answer came. */
  async send(
    url: string,
    init: {
      method: string;
      headers: Record<string, string>;
      body?: string | Buffer;
      signal?: AbortSignal;
      timeoutSeconds?: number;
    },
  ) {
    try {
      return await this.outbound.call(url, {
        method: init.method,
        trusted: true,
        headers: { Accept: 'application/json', ...init.headers },
        ...(init.body !== undefined ? { body: init.body } : {}),
        ...(init.signal ? { signal: init.signal } : {}),
        timeoutSeconds: init.timeoutSeconds ?? TIMEOUT_SECONDS,
        maxResponseBytes: MAX_ANSWER_BYTES,
      });
    } catch (error) {
      if ((error as Error).name === 'AbortError' && init.signal?.aborted) throw error;
      throw new TikTokUnreachableError(
        `TikTok could not be reached (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      );
    }
  }
}
