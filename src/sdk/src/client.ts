import createClient, { type Client } from 'openapi-fetch';
import { detectContentType } from './content-type.js';
import { paginate } from './paginate.js';
import { sendWithRetries } from './retry.js';
import type { paths } from './spec.js';
import type {
  ApprovePostRequest,
  ChangePostStatusRequest,
  ChannelConnection,
  ChannelList,
  ChannelQueue,
  ChannelQueueQuery,
  ChannelQuotaList,
  ChannelSchedule,
  ConnectChannelRequest,
  ConnectionStatus,
  CreatePostRequest,
  ImportPostsRequest,
  ImportReport,
  CreatePostResponse,
  CreateSeriesRequest,
  Media,
  MediaContentType,
  MediaListQuery,
  MediaPage,
  PinterestBoard,
  PinterestBoardList,
  PinterestBoardsQuery,
  Post,
  PostEvent,
  PostEventPage,
  ScheduleSlot,
  PostExportQuery,
  PostFilters,
  PostHistoryQuery,
  PostPage,
  Series,
  SplitSeriesRequest,
  TikTokAnalytics,
  TikTokAnalyticsQuery,
  TikTokCreatorInfo,
  TikTokVideo,
  UpdatePostRequest,
  CreatedWebhook,
  CreateWebhookRequest,
  UpdateWebhookRequest,
  Webhook,
  WebhookDelivery,
  WebhookDeliveryPage,
  WebhookDeliveryQuery,
  WebhookEvent,
  WebhookList,
  WebhookSecret,
} from './types.js';
import { verifyWebhook, type WebhookHeaders } from './webhooks.js';

/** The origin used when neither the constructor nor `SERVICE_API_URL` gives one. */
export const DEFAULT_ORIGIN = 'http://localhost:3000';

const DEFAULT_MAX_RETRIES = 2;
const DEFAULT_MAX_RETRY_AFTER_SECONDS = 10;

/** Options of a {@link Service} client. */
export interface ServiceOptions {
  /**
   * How many times a call is retried after a network failure, a 429 or a 5xx (default 2); 0 turns
   * retrying off. Each call can override it.
   */
  maxRetries?: number;
  /**
   * The longest `Retry-After` the client waits for, in seconds (default 10, so a script fails fast).
   * When the server asks for a longer wait, the call fails at once with a {@link ServiceError} whose
   * `retryAfter` says how long. Raise it for jobs that would rather wait; each call can override it.
   */
  maxRetryAfter?: number;
  /** The `fetch` requests are sent with (default `globalThis.fetch`), e.g. to add a proxy or logging. */
  fetch?: (request: Request) => Promise<Response>;
  /** Headers sent with every API request, e.g. a `User-Agent` naming your product. */
  headers?: Record<string, string>;
}

/** Options of a single call. */
export interface RequestOptions {
  /** Retries for this call, instead of the client's `maxRetries`. */
  maxRetries?: number;
  /** The longest `Retry-After` this call waits for, in seconds, instead of the client's `maxRetryAfter`. */
  maxRetryAfter?: number;
  /** Aborts the call (and any wait between retries); the call then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Extra headers for this call. */
  headers?: Record<string, string>;
}

/** Options of {@link Service.createPost}. */
export interface CreatePostOptions extends RequestOptions {
  /**
   * The `Idempotency-Key` of this create (an `Idempotency-Key` in `headers` works too). By default
   * the client makes a fresh UUID per call and keeps it across the call's retries; pass your own to
   * make a create safe to repeat across calls or processes (within 24 hours the server answers the
   * first result again).
   */
  idempotencyKey?: string;
}

/** Options of {@link Service.upload}. */
export interface UploadOptions extends RequestOptions {
  /** The file's type, when neither its first bytes nor its name tell it. */
  contentType?: MediaContentType;
}

/** The body of a success: `sendWithRetries` has already thrown a `ServiceError` for every other answer. */
function dataOf<T>(result: { data?: T }): T {
  return result.data as T;
}

function headerOf(headers: Record<string, string> | undefined, name: string): string | undefined {
  return Object.entries(headers ?? {}).find(([key]) => key.toLowerCase() === name)?.[1];
}

function defaultOrigin(): string {
  // Read here rather than by the caller so a script configured by its environment needs no code.
  const fromEnv = globalThis.process?.env?.SERVICE_API_URL;
  return fromEnv ? fromEnv : DEFAULT_ORIGIN;
}

function checkRetries(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 0) throw new TypeError(`${name} must be a whole number ≥ 0, not ${value}.`);
  return value;
}

function checkRetryAfter(value: number): number {
  if (!(value >= 0)) throw new TypeError(`maxRetryAfter must be a number of seconds ≥ 0, not ${value}.`);
  return value;
}

/**
 * The client of the Public API (`/public/v1`) of one installation.
 *
 * Every method resolves with the API's own answer (field names as in the API reference) and
 * rejects with a {@link ServiceError}. Network failures, 429 and 5xx answers are retried with
 * capped exponential backoff, honouring `Retry-After`.
 *
 * @example
 * ```ts
 * import Service from '@service/sdk';
 *
 * const service = new Service(process.env.SERVICE_API_KEY!, 'https://posts.example.com');
 * const { data: channels } = await service.channels();
 * ```
 */
export default class Service {
  /** The origin requests go to, e.g. `http://localhost:3000`. */
  readonly origin: string;
  private readonly api: Client<paths>;
  private readonly fetchRequest: (request: Request) => Promise<Response>;
  private readonly maxRetries: number;
  private readonly maxRetryAfter: number;

  /**
   * @param keyOrToken An API key (`svc_live_…`) or an OAuth access token (`pos_…`), sent as
   *   `Authorization: Bearer <keyOrToken>`.
   * @param origin The installation's origin; defaults to the `SERVICE_API_URL` environment
   *   variable, else `http://localhost:3000`.
   * @param options Retries, a custom `fetch`, extra headers.
   */
  constructor(keyOrToken: string, origin?: string, options: ServiceOptions = {}) {
    if (typeof keyOrToken !== 'string' || keyOrToken.trim() === '') {
      throw new TypeError('new Service(keyOrToken): give an API key (svc_live_…) or an OAuth access token (pos_…).');
    }
    const base = origin ?? defaultOrigin();
    if (!URL.canParse(base)) throw new TypeError(`new Service(keyOrToken, origin): "${base}" is not a URL.`);
    this.origin = base.replace(/\/+$/, '');
    this.maxRetries = checkRetries(options.maxRetries ?? DEFAULT_MAX_RETRIES, 'maxRetries');
    this.maxRetryAfter = checkRetryAfter(options.maxRetryAfter ?? DEFAULT_MAX_RETRY_AFTER_SECONDS);
    this.fetchRequest = options.fetch ?? ((request) => globalThis.fetch(request));
    const credential = `Bearer ${keyOrToken.trim()}`;
    this.api = createClient<paths>({ baseUrl: this.origin, headers: options.headers });
    this.api.use({
      onRequest({ request }) {
        request.headers.set('Authorization', credential);
        return request;
      },
    });
  }

  /** The init of one API call: its headers, its signal, and a `fetch` that retries by its policy. */
  private init(options: RequestOptions | undefined, { replayable = true } = {}) {
    return {
      headers: options?.headers,
      signal: options?.signal,
      fetch: this.sender(options, { replayable, expectJson: true }),
    };
  }

  private sender(
    options: RequestOptions | undefined,
    { replayable, expectJson }: { replayable: boolean; expectJson: boolean },
  ) {
    const maxRetries = checkRetries(options?.maxRetries ?? this.maxRetries, 'maxRetries');
    return (request: Request) =>
      sendWithRetries(request, {
        fetch: this.fetchRequest,
        maxRetries,
        maxRetryAfter: checkRetryAfter(options?.maxRetryAfter ?? this.maxRetryAfter),
        replayable,
        expectJson,
      });
  }

  /**
   * Checks the credential: resolves with the organization it acts for and whether it is an API key
   * or an OAuth token; rejects with a 401 {@link ServiceError} when it is not valid.
   *
   * `GET /public/v1/is-connected`
   */
  async isConnected(options?: RequestOptions): Promise<ConnectionStatus> {
    return dataOf(await this.api.GET('/public/v1/is-connected', this.init(options)));
  }

  /**
   * Lists the organization's connected channels, oldest first: `{ data: Channel[] }`.
   *
   * `GET /public/v1/channels`
   */
  async channels(options?: RequestOptions): Promise<ChannelList> {
    return dataOf(await this.api.GET('/public/v1/channels', this.init(options)));
  }

  /** The same as {@link Service.channels}. */
  integrations(options?: RequestOptions): Promise<ChannelList> {
    return this.channels(options);
  }

  /**
   * Removes a channel: its scheduled and failed posts become drafts, nothing on the network changes.
   *
   * `DELETE /public/v1/channels/{id}`
   */
  async deleteChannel(id: string, options?: RequestOptions): Promise<void> {
    await this.api.DELETE('/public/v1/channels/{id}', { ...this.init(options), params: { path: { id } } });
  }

  /**
   * Starts connecting a user's YouTube or TikTok account: resolves with the network's consent page
   * (`authorizationUrl`) to send the user's browser to. When the user comes back, the server sends
   * their browser to `returnUrl` with `channelId` (or `error` and `errorDescription`) and your
   * `state` in the query. `returnUrl` must be on an origin you may return to: an OAuth app's
   * registered redirect URL's origin, or, for an API key, one the organization lists in the web app.
   *
   * Retried like a read: a retry only starts another connection, and the unused one expires.
   *
   * `POST /public/v1/channels/connect`
   */
  async connectChannel(request: ConnectChannelRequest, options?: RequestOptions): Promise<ChannelConnection> {
    return dataOf(await this.api.POST('/public/v1/channels/connect', { ...this.init(options), body: request }));
  }

  /**
   * Reads the daily publishing quota of every channel for the current UTC day.
   *
   * `GET /public/v1/channels/quota`
   */
  async quota(options?: RequestOptions): Promise<ChannelQuotaList> {
    return dataOf(await this.api.GET('/public/v1/channels/quota', this.init(options)));
  }

  /**
   * Creates one post per target channel, tied by one `group` id, to publish at `date`
   * (`type: 'schedule'`), at once (`'now'`) or never (`'draft'`).
   *
   * The request carries an `Idempotency-Key` that stays the same across this call's retries, so a
   * retry after a lost response never creates the posts twice.
   *
   * `POST /public/v1/posts`
   */
  async createPost(body: CreatePostRequest, options?: CreatePostOptions): Promise<CreatePostResponse> {
    const idempotencyKey =
      options?.idempotencyKey ?? headerOf(options?.headers, 'idempotency-key') ?? globalThis.crypto.randomUUID();
    return dataOf(
      await this.api.POST('/public/v1/posts', {
        ...this.init(options),
        params: { header: { 'Idempotency-Key': idempotencyKey } },
        body,
      }),
    );
  }

  /** The same as {@link Service.createPost}. */
  post(body: CreatePostRequest, options?: CreatePostOptions): Promise<CreatePostResponse> {
    return this.createPost(body, options);
  }

  /**
   * Lists one page of posts, ordered by `scheduledAt`, filtered by date range (`from`, `to`),
   * `channelId`, `status` and `group`. Pass `nextCursor` back as `cursor` for the next page, or use
   * {@link Service.iteratePosts}.
   *
   * `GET /public/v1/posts`
   */
  async listPosts(filters: PostFilters = {}, options?: RequestOptions): Promise<PostPage> {
    return dataOf(await this.api.GET('/public/v1/posts', { ...this.init(options), params: { query: filters } }));
  }

  /** The same as {@link Service.listPosts}. */
  postList(filters: PostFilters = {}, options?: RequestOptions): Promise<PostPage> {
    return this.listPosts(filters, options);
  }

  /**
   * Every post matching `filters`, page after page.
   *
   * @example
   * ```ts
   * for await (const post of service.iteratePosts({ status: ['failed'] })) console.log(post.id, post.error);
   * ```
   */
  iteratePosts(
    filters: Omit<PostFilters, 'cursor'> = {},
    options?: RequestOptions,
  ): AsyncGenerator<Post, void, undefined> {
    return paginate(
      (cursor) => this.listPosts({ ...filters, cursor }, options),
      (page) => page.data,
    );
  }

  /**
   * Reads one post.
   *
   * `GET /public/v1/posts/{id}`
   */
  async getPost(id: string, options?: RequestOptions): Promise<Post> {
    return dataOf(await this.api.GET('/public/v1/posts/{id}', { ...this.init(options), params: { path: { id } } }));
  }

  /**
   * One page of a post's history, oldest first: its creation, each scheduling, each publishing
   * attempt with its retries and their reasons, and its outcome. Pass `nextCursor` back as `cursor`
   * for the next page, or use {@link Service.iteratePostHistory}.
   *
   * `GET /public/v1/posts/{id}/history`
   */
  async postHistory(id: string, page: PostHistoryQuery = {}, options?: RequestOptions): Promise<PostEventPage> {
    return dataOf(
      await this.api.GET('/public/v1/posts/{id}/history', {
        ...this.init(options),
        params: { path: { id }, query: page },
      }),
    );
  }

  /**
   * Every event of a post, oldest first, page after page.
   *
   * @example
   * ```ts
   * for await (const event of service.iteratePostHistory(postId)) {
   *   console.log(event.at, event.type, event.reason ?? '');
   * }
   * ```
   */
  iteratePostHistory(id: string, options?: RequestOptions): AsyncGenerator<PostEvent, void, undefined> {
    return paginate(
      (cursor) => this.postHistory(id, { cursor }, options),
      (page) => page.data,
    );
  }

  /**
   * Changes the content, media or settings of a post not yet on its way to the network; only the
   * fields given change.
   *
   * `PATCH /public/v1/posts/{id}`
   */
  async updatePost(id: string, changes: UpdatePostRequest, options?: RequestOptions): Promise<Post> {
    return dataOf(
      await this.api.PATCH('/public/v1/posts/{id}', { ...this.init(options), params: { path: { id } }, body: changes }),
    );
  }

  /**
   * Sets when a post publishes and makes it `scheduled` (from `draft`, `scheduled` or `failed`).
   *
   * `POST /public/v1/posts/{id}/schedule`
   */
  async schedulePost(id: string, scheduledAt: string | Date, options?: RequestOptions): Promise<Post> {
    const at = scheduledAt instanceof Date ? scheduledAt.toISOString() : scheduledAt;
    return dataOf(
      await this.api.POST('/public/v1/posts/{id}/schedule', {
        ...this.init(options),
        params: { path: { id } },
        body: { scheduledAt: at },
      }),
    );
  }

  /**
   * A channel's weekly posting slots, in the organization's time zone.
   *
   * `GET /public/v1/channels/{id}/schedule`
   */
  async getChannelSchedule(channelId: string, options?: RequestOptions): Promise<ChannelSchedule> {
    return dataOf(
      await this.api.GET('/public/v1/channels/{id}/schedule', {
        ...this.init(options),
        params: { path: { id: channelId } },
      }),
    );
  }

  /**
   * Replaces a channel's posting slots; its queued posts whose slot is gone move to the next free slots.
   *
   * `PUT /public/v1/channels/{id}/schedule`
   */
  async replaceChannelSchedule(
    channelId: string,
    slots: ScheduleSlot[],
    options?: RequestOptions,
  ): Promise<ChannelSchedule> {
    return dataOf(
      await this.api.PUT('/public/v1/channels/{id}/schedule', {
        ...this.init(options),
        params: { path: { id: channelId } },
        body: { slots },
      }),
    );
  }

  /**
   * A channel's next slots, each with the queued post in it (`null` when free).
   *
   * `GET /public/v1/channels/{id}/queue`
   */
  async getChannelQueue(
    channelId: string,
    query: ChannelQueueQuery = {},
    options?: RequestOptions,
  ): Promise<ChannelQueue> {
    return dataOf(
      await this.api.GET('/public/v1/channels/{id}/queue', {
        ...this.init(options),
        params: { path: { id: channelId }, query },
      }),
    );
  }

  /**
   * Puts a post in its channel's queue: at the slot `at` (swapping with the queued post there), or,
   * without it, in the next free slot.
   *
   * `POST /public/v1/posts/{id}/queue`
   */
  async queuePost(id: string, at?: string | Date, options?: RequestOptions): Promise<Post> {
    const slot = at instanceof Date ? at.toISOString() : at;
    return dataOf(
      await this.api.POST('/public/v1/posts/{id}/queue', {
        ...this.init(options),
        params: { path: { id } },
        body: slot === undefined ? {} : { at: slot },
      }),
    );
  }

  /**
   * Moves a post between `draft` and `scheduled` (a `failed` post may go to either).
   *
   * `PATCH /public/v1/posts/{id}/status`
   */
  async changePostStatus(
    id: string,
    status: ChangePostStatusRequest['status'],
    options?: RequestOptions,
  ): Promise<Post> {
    return dataOf(
      await this.api.PATCH('/public/v1/posts/{id}/status', {
        ...this.init(options),
        params: { path: { id } },
        body: { status },
      }),
    );
  }

  /**
   * Approves a post waiting for approval (`pending_approval`): it is scheduled at its `scheduledAt`, or
   * published now with `{ when: 'now' }`. Needs the `editor` role or above.
   *
   * `POST /public/v1/posts/{id}/approve`
   */
  async approvePost(id: string, request: ApprovePostRequest = {}, options?: RequestOptions): Promise<Post> {
    return dataOf(
      await this.api.POST('/public/v1/posts/{id}/approve', {
        ...this.init(options),
        params: { path: { id } },
        body: request,
      }),
    );
  }

  /**
   * Rejects a post waiting for approval with a comment for its author: it is a draft again. Needs the
   * `editor` role or above.
   *
   * `POST /public/v1/posts/{id}/reject`
   */
  async rejectPost(id: string, comment: string, options?: RequestOptions): Promise<Post> {
    return dataOf(
      await this.api.POST('/public/v1/posts/{id}/reject', {
        ...this.init(options),
        params: { path: { id } },
        body: { comment },
      }),
    );
  }

  /**
   * Deletes a post; a scheduled post is then never published.
   *
   * `DELETE /public/v1/posts/{id}`
   */
  async deletePost(id: string, options?: RequestOptions): Promise<void> {
    await this.api.DELETE('/public/v1/posts/{id}', { ...this.init(options), params: { path: { id } } });
  }

  /**
   * Skips one occurrence of a series: it is not published, and the series never creates it again.
   *
   * `POST /public/v1/posts/{id}/skip`
   */
  async skipPost(id: string, options?: RequestOptions): Promise<Post> {
    return dataOf(
      await this.api.POST('/public/v1/posts/{id}/skip', { ...this.init(options), params: { path: { id } } }),
    );
  }

  /**
   * Creates a recurring series: posts repeated by an RFC 5545 rule in a time zone, each occurrence a
   * post of its own, created ahead of time.
   *
   * `POST /public/v1/series`
   */
  async createSeries(series: CreateSeriesRequest, options?: RequestOptions): Promise<Series> {
    return dataOf(await this.api.POST('/public/v1/series', { ...this.init(options), body: series }));
  }

  /**
   * A series, with its next occurrences.
   *
   * `GET /public/v1/series/{id}`
   */
  async getSeries(id: string, options?: RequestOptions): Promise<Series> {
    return dataOf(await this.api.GET('/public/v1/series/{id}', { ...this.init(options), params: { path: { id } } }));
  }

  /**
   * Changes a series from an occurrence on: the series ends at `from`, and the new one it answers
   * continues it with the changes.
   *
   * `POST /public/v1/series/{id}/split`
   */
  async splitSeries(id: string, changes: SplitSeriesRequest, options?: RequestOptions): Promise<Series> {
    return dataOf(
      await this.api.POST('/public/v1/series/{id}/split', {
        ...this.init(options),
        params: { path: { id } },
        body: changes,
      }),
    );
  }

  /**
   * Ends a series now; its occurrences still ahead are deleted.
   *
   * `POST /public/v1/series/{id}/end`
   */
  async endSeries(id: string, options?: RequestOptions): Promise<Series> {
    return dataOf(
      await this.api.POST('/public/v1/series/{id}/end', { ...this.init(options), params: { path: { id } } }),
    );
  }

  /**
   * Creates a draft copy of a post (its channel, content, media, thread, first comment and settings),
   * in a group of its own and without a date.
   *
   * `POST /public/v1/posts/{id}/duplicate`
   */
  async duplicatePost(id: string, options?: RequestOptions): Promise<Post> {
    return dataOf(
      await this.api.POST('/public/v1/posts/{id}/duplicate', { ...this.init(options), params: { path: { id } } }),
    );
  }

  /**
   * Imports posts from a CSV file's text (`{ csv }`) or from rows (`{ rows }`): with `dryRun`, checks
   * every row and reports each one's errors; without, creates every row not imported before, all or
   * none (a row that breaks a rule rejects with a 422 {@link ServiceError} whose `details` name it).
   *
   * Retried like a read: importing the same rows again creates nothing twice.
   *
   * `POST /public/v1/posts/import`
   */
  async importPosts(
    file: ImportPostsRequest,
    { dryRun = false, ...options }: RequestOptions & { dryRun?: boolean } = {},
  ): Promise<ImportReport> {
    return dataOf(
      await this.api.POST('/public/v1/posts/import', {
        ...this.init(options),
        params: { query: { dryRun } },
        body: file,
      }),
    );
  }

  /**
   * The posts the filters select (those of {@link Service.listPosts}), as the text of a CSV file
   * (`format: 'csv'`, the default) or of a JSON one (`format: 'json'`), which
   * {@link Service.importPosts} reads back.
   *
   * `GET /public/v1/posts/export`
   */
  async exportPosts(query: PostExportQuery = {}, options?: RequestOptions): Promise<string> {
    const { data } = await this.api.GET('/public/v1/posts/export', {
      headers: options?.headers,
      signal: options?.signal,
      fetch: this.sender(options, { replayable: true, expectJson: false }),
      params: { query },
      parseAs: 'text',
    });
    return data as string;
  }

  /**
   * Lists one page of media, newest first; or use {@link Service.iterateMedia}.
   *
   * `GET /public/v1/media`
   */
  async listMedia(page: MediaListQuery = {}, options?: RequestOptions): Promise<MediaPage> {
    return dataOf(await this.api.GET('/public/v1/media', { ...this.init(options), params: { query: page } }));
  }

  /** Every media item, page after page, newest first. */
  iterateMedia(options?: RequestOptions): AsyncGenerator<Media, void, undefined> {
    return paginate(
      (cursor) => this.listMedia({ cursor }, options),
      (page) => page.data,
    );
  }

  /**
   * Uploads a file as media in the API's three signed-upload steps: creates the upload, PUTs the
   * bytes to the signed URL it answers (with exactly the headers it names and no credential),
   * then completes it.
   *
   * The content type is read from the file's first bytes, else from the extension of `fileName`
   * (or given as `options.contentType`); a file of none of the accepted types throws a `TypeError`
   * before any request.
   *
   * `POST /public/v1/media/uploads`, `PUT <uploadUrl>`, `POST /public/v1/media/uploads/{uploadId}/complete`
   */
  async upload(data: Uint8Array | ArrayBuffer, fileName: string, options?: UploadOptions): Promise<Media> {
    const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
    const contentType = options?.contentType ?? detectContentType(bytes, fileName);
    if (contentType === undefined) {
      throw new TypeError(
        `upload: cannot tell the type of "${fileName}" from its bytes or its name; ` +
          'accepted are JPEG, PNG, GIF, WebP, MP4, QuickTime, WebM and PDF (or pass options.contentType).',
      );
    }
    const upload = dataOf(
      await this.api.POST('/public/v1/media/uploads', {
        ...this.init(options),
        body: { fileName, contentType, size: bytes.byteLength },
      }),
    );
    // Content-Length is fetch's to set from the body (the Fetch standard forbids setting it by
    // hand, and browsers ignore it); the API names it for clients that send raw HTTP.
    const headers = Object.entries(upload.headers).filter(([name]) => name.toLowerCase() !== 'content-length');
    const put = new Request(upload.uploadUrl, {
      method: upload.method,
      headers,
      body: bytes,
      signal: options?.signal,
    });
    const sent = await this.sender(options, { replayable: true, expectJson: false })(put);
    await sent.body?.cancel();
    return dataOf(
      await this.api.POST('/public/v1/media/uploads/{uploadId}/complete', {
        ...this.init(options),
        params: { path: { uploadId: upload.uploadId } },
      }),
    );
  }

  /**
   * Creates media from a public `http(s)` URL, which the server downloads.
   *
   * Retried after a 429 only: after a network failure or a 5xx the server may already have
   * created the media, so the call fails rather than risk creating it twice.
   *
   * `POST /public/v1/media/upload-from-url`
   */
  async uploadFromUrl(url: string, options?: RequestOptions): Promise<Media> {
    return dataOf(
      await this.api.POST('/public/v1/media/upload-from-url', {
        ...this.init(options, { replayable: false }),
        body: { url },
      }),
    );
  }

  /**
   * Deletes media and its file (refused with 409 while a scheduled post uses it).
   *
   * `DELETE /public/v1/media/{id}`
   */
  async deleteMedia(id: string, options?: RequestOptions): Promise<void> {
    await this.api.DELETE('/public/v1/media/{id}', { ...this.init(options), params: { path: { id } } });
  }

  /**
   * Reads what a TikTok account allows right now. Call it right before building a TikTok direct
   * post, offer the user only these options, and send the TikTok item only when `canPost` is true.
   *
   * `GET /public/v1/channels/{id}/tiktok/creator-info`
   */
  async tiktokCreatorInfo(channelId: string, options?: RequestOptions): Promise<TikTokCreatorInfo> {
    return dataOf(
      await this.api.GET('/public/v1/channels/{id}/tiktok/creator-info', {
        ...this.init(options),
        params: { path: { id: channelId } },
      }),
    );
  }

  /**
   * Reads one page (`data`, up to `limit`, default 25) of a Pinterest account's boards, each with its
   * sections: what a pin's `boardId` and `boardSectionId` are chosen from. Pass `nextCursor` back as
   * `cursor` for more, or use {@link Service.iteratePinterestBoards}.
   *
   * `GET /public/v1/channels/{id}/pinterest/boards`
   */
  async pinterestBoards(
    channelId: string,
    query: PinterestBoardsQuery = {},
    options?: RequestOptions,
  ): Promise<PinterestBoardList> {
    return dataOf(
      await this.api.GET('/public/v1/channels/{id}/pinterest/boards', {
        ...this.init(options),
        params: { path: { id: channelId }, query },
      }),
    );
  }

  /** Every board of a Pinterest account, with its sections, in Pinterest's order. */
  iteratePinterestBoards(
    channelId: string,
    query: Omit<PinterestBoardsQuery, 'cursor'> = {},
    options?: RequestOptions,
  ): AsyncGenerator<PinterestBoard, void, undefined> {
    return paginate(
      (cursor) => this.pinterestBoards(channelId, { ...query, cursor }, options),
      (page) => page.data,
    );
  }

  /**
   * Reads a TikTok account's totals and one page (`data`, up to `limit`, default 20) of the videos it
   * published in the last `days` days (default 7); pass `nextCursor` back as `cursor` for more, or use
   * {@link Service.iterateTiktokVideos}.
   *
   * `GET /public/v1/channels/{id}/tiktok/analytics`
   */
  async tiktokAnalytics(
    channelId: string,
    query: TikTokAnalyticsQuery = {},
    options?: RequestOptions,
  ): Promise<TikTokAnalytics> {
    return dataOf(
      await this.api.GET('/public/v1/channels/{id}/tiktok/analytics', {
        ...this.init(options),
        params: { path: { id: channelId }, query },
      }),
    );
  }

  /** Every video a TikTok account published in the last `days` days (default 7), newest first. */
  iterateTiktokVideos(
    channelId: string,
    query: Omit<TikTokAnalyticsQuery, 'cursor'> = {},
    options?: RequestOptions,
  ): AsyncGenerator<TikTokVideo, void, undefined> {
    return paginate(
      (cursor) => this.tiktokAnalytics(channelId, { ...query, cursor }, options),
      (page) => page.data,
    );
  }
  /**
   * Lists the webhook endpoints: all the organization's with an API key, your app's own with an
   * OAuth token.
   *
   * `GET /public/v1/webhooks`
   */
  async listWebhooks(options?: RequestOptions): Promise<WebhookList> {
    return dataOf(await this.api.GET('/public/v1/webhooks', this.init(options)));
  }

  /**
   * Registers an endpoint for the event types listed. The answer's `secret` (`whsec_…`) is shown
   * this once: store it to verify deliveries with {@link verifyWebhook}. Not retried after a network
   * failure or a 5xx, which could register the endpoint twice.
   *
   * `POST /public/v1/webhooks`
   */
  async createWebhook(request: CreateWebhookRequest, options?: RequestOptions): Promise<CreatedWebhook> {
    return dataOf(
      await this.api.POST('/public/v1/webhooks', { ...this.init(options, { replayable: false }), body: request }),
    );
  }

  /** `GET /public/v1/webhooks/{id}` */
  async getWebhook(id: string, options?: RequestOptions): Promise<Webhook> {
    return dataOf(await this.api.GET('/public/v1/webhooks/{id}', { ...this.init(options), params: { path: { id } } }));
  }

  /**
   * Changes an endpoint's URL, event types or description, or turns it off or on (`enabled`).
   *
   * `PATCH /public/v1/webhooks/{id}`
   */
  async updateWebhook(id: string, changes: UpdateWebhookRequest, options?: RequestOptions): Promise<Webhook> {
    return dataOf(
      await this.api.PATCH('/public/v1/webhooks/{id}', {
        ...this.init(options),
        params: { path: { id } },
        body: changes,
      }),
    );
  }

  /** `DELETE /public/v1/webhooks/{id}` */
  async deleteWebhook(id: string, options?: RequestOptions): Promise<void> {
    await this.api.DELETE('/public/v1/webhooks/{id}', { ...this.init(options), params: { path: { id } } });
  }

  /**
   * Sends a `webhook.test` event to the endpoint; the answer is the delivery, to follow in
   * {@link Service.webhookDeliveries}.
   *
   * `POST /public/v1/webhooks/{id}/test`
   */
  async testWebhook(id: string, options?: RequestOptions): Promise<WebhookDelivery> {
    return dataOf(
      await this.api.POST('/public/v1/webhooks/{id}/test', { ...this.init(options), params: { path: { id } } }),
    );
  }

  /**
   * Makes a new signing secret, shown in the answer once; the previous one keeps signing for 24
   * hours. Not retried after a network failure or a 5xx: a second rotation would end the secret
   * the first one made before you saw it.
   *
   * `POST /public/v1/webhooks/{id}/rotate-secret`
   */
  async rotateWebhookSecret(id: string, options?: RequestOptions): Promise<WebhookSecret> {
    return dataOf(
      await this.api.POST('/public/v1/webhooks/{id}/rotate-secret', {
        ...this.init(options, { replayable: false }),
        params: { path: { id } },
      }),
    );
  }

  /**
   * Lists one page of an endpoint's deliveries, newest first; or use
   * {@link Service.iterateWebhookDeliveries}.
   *
   * `GET /public/v1/webhooks/{id}/deliveries`
   */
  async webhookDeliveries(
    id: string,
    page: WebhookDeliveryQuery = {},
    options?: RequestOptions,
  ): Promise<WebhookDeliveryPage> {
    return dataOf(
      await this.api.GET('/public/v1/webhooks/{id}/deliveries', {
        ...this.init(options),
        params: { path: { id }, query: page },
      }),
    );
  }

  /** Every delivery of an endpoint, page after page, newest first. */
  iterateWebhookDeliveries(id: string, options?: RequestOptions): AsyncGenerator<WebhookDelivery, void, undefined> {
    return paginate(
      (cursor) => this.webhookDeliveries(id, { cursor }, options),
      (page) => page.data,
    );
  }

  /**
   * Sends a delivery that succeeded or failed again, with the same `webhook-id` and payload.
   *
   * `POST /public/v1/webhooks/{id}/deliveries/{deliveryId}/retry`
   */
  async retryWebhookDelivery(id: string, deliveryId: string, options?: RequestOptions): Promise<WebhookDelivery> {
    return dataOf(
      await this.api.POST('/public/v1/webhooks/{id}/deliveries/{deliveryId}/retry', {
        ...this.init(options),
        params: { path: { id, deliveryId } },
      }),
    );
  }

  /** {@link verifyWebhook}, for callers that have the class at hand. */
  static verifyWebhook(payload: string | Uint8Array, headers: WebhookHeaders, secret: string | string[]): WebhookEvent {
    return verifyWebhook(payload, headers, secret);
  }
}
