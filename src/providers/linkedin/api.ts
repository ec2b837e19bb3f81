import type { Clock } from '../../core/clock.js';
import type { LinkedInConfig } from '../../core/config.js';
import type { OutboundClient } from '../../net/outbound-client.js';
import { callNetwork, type NetworkAnswer } from '../network-call.js';
import {
  PermanentPublishError,
  ReconnectNeededError,
  retryAfterSeconds,
  TransientPublishError,
  type PublishError,
} from '../publishing-contract.js';

const TIMEOUT_SECONDS = 30;
/** A page of an author's posts or of a post's comments stays well below this. */
const MAX_ANSWER_BYTES = 2 * 1024 * 1024;
/**
 * The Rest.li protocol the API's requests and answers are written in: 2.0.0 encodes a URN in a path or
 * a query as LinkedIn's examples do, and LinkedIn asks for the header on the Posts API's calls.
 */
const RESTLI_PROTOCOL = '2.0.0';

export interface LinkedInRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** `Bearer <access token>`; absent at the OAuth endpoints, which take the app's credentials in the form. */
  authorization?: string;
  body?: { json: unknown } | { form: Record<string, string> } | { bytes: Buffer; contentType: string };
  signal?: AbortSignal;
  timeoutSeconds?: number;
}

/**
 * The one way this server calls LinkedIn: the versioned API (api.linkedin.com/rest, every call with
 * `Linkedin-Version` and `X-Restli-Protocol-Version`), OpenID's userinfo, the OAuth endpoints
 * (www.linkedin.com/oauth/v2) and the upload URLs the API answers. LinkedIn could not be reached:
 * `TransientPublishError` without an answer (see `callNetwork`).
 */
export class LinkedInApi {
  constructor(
    readonly config: LinkedInConfig,
    private readonly outbound: OutboundClient,
  ) {}

  /** A call of the API at `path` (`/rest/…`, `/v2/…`). */
  send(path: string, request: LinkedInRequest): Promise<NetworkAnswer> {
    return this.call(`${this.config.apiUrl}${path}`, request, {
      'Linkedin-Version': this.config.version,
      'X-Restli-Protocol-Version': RESTLI_PROTOCOL,
    });
  }

  /** A call of LinkedIn's OAuth endpoints (`/oauth/v2/…`). */
  oauth(path: string, form: Record<string, string>): Promise<NetworkAnswer> {
    return this.call(`${this.config.authUrl}${path}`, { method: 'POST', body: { form } }, {});
  }

  /** A PUT of bytes to an upload URL the API answered (LinkedIn's media storage). */
  upload(url: string, request: LinkedInRequest): Promise<NetworkAnswer> {
    return this.call(url, request, {});
  }

  private call(url: string, request: LinkedInRequest, headers: Record<string, string>): Promise<NetworkAnswer> {
    const { body } = request;
    const encoded =
      body === undefined
        ? undefined
        : 'json' in body
          ? { type: 'application/json', data: JSON.stringify(body.json) as string | Buffer }
          : 'form' in body
            ? { type: 'application/x-www-form-urlencoded', data: new URLSearchParams(body.form).toString() }
            : { type: body.contentType, data: body.bytes };
    return callNetwork(this.outbound, 'LinkedIn', url, {
      method: request.method,
      headers: {
        Accept: 'application/json',
        ...headers,
        ...(request.authorization ? { Authorization: request.authorization } : {}),
        ...(encoded ? { 'Content-Type': encoded.type } : {}),
      },
      ...(encoded ? { body: encoded.data } : {}),
      ...(request.signal ? { signal: request.signal } : {}),
      timeoutSeconds: request.timeoutSeconds ?? TIMEOUT_SECONDS,
      maxResponseBytes: MAX_ANSWER_BYTES,
    });
  }
}

/** An answer's JSON body, or `undefined` when it is not JSON (a proxy's page, an empty 201). */
export function jsonOf<T>(answer: NetworkAnswer): T | undefined {
  try {
    return JSON.parse(answer.body) as T;
  } catch {
    return undefined;
  }
}

interface Problem {
  message?: string;
  serviceErrorCode?: number;
  code?: string;
  status?: number;
  error?: string;
  error_description?: string;
}

/** What LinkedIn says in an error answer, in its words (`message`, or OAuth's `error_description`). */
export function linkedinMessage(answer: NetworkAnswer): string {
  const problem = jsonOf<Problem>(answer);
  const words = problem?.message || problem?.error_description || problem?.error;
  const code = problem?.code ? ` (${problem.code})` : '';
  return words ? `${words}${code}` : `LinkedIn answered ${answer.status}`;
}

/** The id LinkedIn gives each answer (`x-li-uuid`), which its support asks for. */
export function linkedinLogId(answer: NetworkAnswer): string | undefined {
  const id = answer.headers['x-li-uuid'];
  return typeof id === 'string' ? id : undefined;
}

/**
 * LinkedIn's error answer to a step of a publication, as the publisher takes it: 401 the account's
 * token (expired or revoked: LinkedIn gives no refresh here, see LinkedInTokens), 426 the API version
 * this server sends was retired (the operator moves LINKEDIN_VERSION on), 429 a wait, 5xx a passing
 * failure (`answered: false` for a call that may have done its work), anything else a refusal in
 * LinkedIn's words.
 */
export function publishError(
  answer: NetworkAnswer,
  what: string,
  clock: Clock,
  version: string,
  options: { mayHaveApplied?: boolean } = {},
): PublishError {
  const message = linkedinMessage(answer);
  const logId = linkedinLogId(answer);
  if (answer.status === 401)
    return new ReconnectNeededError(`LinkedIn refused the account's access token (${message})`, logId);
  if (answer.status === 426)
    return new PermanentPublishError(
      'rejected_by_network',
      `LinkedIn no longer serves the API version this server sends (${version}): ${message}. The operator ` +
        'sets LINKEDIN_VERSION to a version LinkedIn supports (learn.microsoft.com/linkedin/marketing/versioning) ' +
        'and restarts the server, then the post can be scheduled again.',
      logId,
    );
  if (answer.status === 429)
    return new TransientPublishError(`LinkedIn's rate limit is reached (${what}: ${message})`, {
      answered: true,
      retryAfterSeconds: retryAfterSeconds(answer.headers['retry-after'], clock.now()),
      ...(logId ? { logId } : {}),
    });
  if (answer.status >= 500)
    return new TransientPublishError(`LinkedIn failed (${answer.status}, ${what}: ${message})`, {
      answered: !options.mayHaveApplied,
      retryAfterSeconds: retryAfterSeconds(answer.headers['retry-after'], clock.now()),
      ...(logId ? { logId } : {}),
    });
  return new PermanentPublishError('rejected_by_network', `LinkedIn refused the ${what}: ${message}`, logId);
}
