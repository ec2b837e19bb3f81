import { randomBytes } from 'node:crypto';
import twitter from 'twitter-text';
import {
  type Answer,
  compareIds,
  type FakeXContext,
  forbidden,
  ID_PATTERN,
  invalidRequest,
  jsonBody,
  listParameter,
  notFound,
  onlyProperties,
  type XRequest,
} from './fake-x-protocol.js';
import type { MediaStore } from './fake-x-media.js';

// Posts as X API v2 creates, deletes and reads them (`POST /2/tweets`, `DELETE /2/tweets/:id`,
// `GET /2/tweets/:id`, `GET /2/users/:id/tweets`): the request and answer fields of the OpenAPI document, the
// post object of the data dictionary (default fields `id`, `text`, `edit_history_tweet_ids`; the rest asked
// for with `tweet.fields`, which the newest reference calls `post.fields`: both are taken), and X's refusals:
// a text over 280 by twitter-text's weighted count (every URL 23), a duplicate of one of the account's posts,
// a reply to a post that is gone, media not ready.
//
// X shows a post's text as it stores it, not as it was sent: every URL wrapped in a t.co link (the original
// in `entities.urls[].expanded_url`) and `&`, `<` and `>` escaped as HTML entities. A client that looks for its
// post among the account's recent ones compares with that in mind.

/** A post of the account, as the fake holds it. */
export interface FakeXTweet {
  id: string;
  /** The text as it was sent. */
  sentText: string;
  /** The text as X shows it: URLs as t.co links, `&`, `<` and `>` escaped. */
  text: string;
  /** ISO 8601 with milliseconds, on the fake's clock. */
  createdAt: string;
  authorId: string;
  /** The first post of the thread: its own id unless it replies. */
  conversationId: string;
  inReplyToTweetId: string | null;
  inReplyToUserId: string | null;
  mediaIds: string[];
  mediaKeys: string[];
  /** `everyone` unless the post said `following`, `mentionedUsers`, `subscribers` or `verified`. */
  replySettings: string;
  madeWithAi: boolean;
  paidPartnership: boolean;
  /** The URLs X wrapped: where each t.co link leads. */
  urls: { url: string; expandedUrl: string; displayUrl: string }[];
  deleted: boolean;
  /** Created, but the connection was cut before X answered (`loseNextAnswer('createPosts')`). */
  answerLost: boolean;
}

const MAX_WEIGHTED_LENGTH = 280;
const REPLY_SETTINGS = ['following', 'mentionedUsers', 'subscribers', 'verified'];
const CREATE_DECLARED = [
  'card_uri',
  'community_id',
  'direct_message_deep_link',
  'edit_options',
  'for_super_followers_only',
  'geo',
  'made_with_ai',
  'media',
  'nullcast',
  'paid_partnership',
  'poll',
  'quote_tweet_id',
  'reply',
  'reply_settings',
  'share_with_followers',
  'text',
];
const CREATE_MODELED = ['text', 'media', 'reply', 'reply_settings', 'made_with_ai', 'paid_partnership'];
const MEDIA_DECLARED = [
  'call_to_actions',
  'description',
  'embeddable',
  'media_ids',
  'preview_media_id',
  'tagged_user_ids',
  'title',
];
/** `auto_populate_reply_metadata` is taken and dropped, as the OpenAPI document says X does. */
const REPLY_MODELED = ['in_reply_to_tweet_id', 'auto_populate_reply_metadata'];
const REPLY_DECLARED = [...REPLY_MODELED, 'exclude_reply_user_ids'];

/** Post fields X knows, by either name of the parameter; those the fake does not fill are left out. */
const TWEET_FIELDS = [
  'article',
  'article_title',
  'attachments',
  'author_id',
  'card_uri',
  'community_id',
  'context_annotations',
  'conversation_id',
  'created_at',
  'display_text_range',
  'edit_controls',
  'edit_history_tweet_ids',
  'entities',
  'geo',
  'id',
  'in_reply_to_user_id',
  'lang',
  'matched_media_notes',
  'media_metadata',
  'non_public_metrics',
  'note_post',
  'note_request_suggestions',
  'note_tweet',
  'organic_metrics',
  'paid_partnership',
  'possibly_sensitive',
  'promoted_metrics',
  'public_metrics',
  'referenced_tweets',
  'reply_settings',
  'scopes',
  'source',
  'suggested_source_links',
  'suggested_source_links_with_counts',
  'text',
  'withheld',
];
const EXPANSIONS = [
  'article.cover_media',
  'article.media_entities',
  'attachments.media_keys',
  'attachments.media_source_tweet',
  'attachments.poll_ids',
  'author_id',
  'edit_history_post_ids',
  'edit_history_tweet_ids',
  'entities.mentions.username',
  'entities.note.mentions.username',
  'geo.place_id',
  'in_reply_to_user_id',
  'referenced_posts',
  'referenced_tweets.id',
  'referenced_tweets.id.attachments.media_keys',
  'referenced_tweets.id.author_id',
  'username',
];
const MEDIA_FIELDS = [
  'alt_text',
  'duration_ms',
  'height',
  'media_key',
  'non_public_metrics',
  'organic_metrics',
  'preview_image_url',
  'promoted_metrics',
  'public_metrics',
  'type',
  'url',
  'variants',
  'width',
];
export const USER_FIELDS = [
  'affiliation',
  'confirmed_email',
  'connection_status',
  'created_at',
  'description',
  'entities',
  'id',
  'is_identity_verified',
  'location',
  'most_recent_tweet_id',
  'name',
  'parody',
  'pinned_tweet_id',
  'profile_banner_url',
  'profile_image_url',
  'protected',
  'public_metrics',
  'receives_your_dm',
  'subscribes_to_you',
  'subscription',
  'subscription_type',
  'url',
  'username',
  'verified',
  'verified_followers_count',
  'verified_type',
  'withheld',
];

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const tcoCode = () => Array.from(randomBytes(10), (b) => ALPHANUMERIC[b % ALPHANUMERIC.length]).join('');
const escapeHtml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** The text as X stores and shows it: each URL a t.co link, the rest HTML-escaped. */
function render(sent: string): { text: string; urls: FakeXTweet['urls'] } {
  const text = sent.normalize('NFC');
  const found = twitter.extractUrlsWithIndices(text);
  const urls: FakeXTweet['urls'] = [];
  let shown = '';
  let at = 0;
  for (const { url, indices } of found) {
    shown += escapeHtml(text.slice(at, indices[0]));
    const link = `https://t.co/${tcoCode()}`;
    const expandedUrl = /^https?:\/\//i.test(url) ? url : `http://${url}`;
    const bare = expandedUrl.replace(/^https?:\/\/(www\.)?/i, '');
    urls.push({ url: link, expandedUrl, displayUrl: bare.length > 26 ? `${bare.slice(0, 25)}…` : bare });
    shown += link;
    at = indices[1];
  }
  shown += escapeHtml(text.slice(at));
  return { text: shown, urls };
}

/** Where a substring of `text` starts and ends, in code points, as X's entity indices count. */
function codePointRange(text: string, part: string, from: number): { start: number; end: number; next: number } {
  const at = text.indexOf(part, from);
  const start = [...text.slice(0, at)].length;
  return { start, end: start + [...part].length, next: at + part.length };
}

/** The posts part of the fake X: its state, its switches, and the handlers of its endpoints. */
export class PostStore {
  readonly tweets: FakeXTweet[] = [];
  private duplicateNext = false;
  private delaySeconds = 0;
  private readonly pageTokens = new Map<string, string>();

  constructor(
    private readonly context: FakeXContext,
    private readonly media: MediaStore,
  ) {}

  /** The next post is refused as a duplicate, whatever its text. */
  refuseNextAsDuplicate(): void {
    this.duplicateNext = true;
  }

  /** A post shows in the account's timeline `seconds` after it was created (default 0). */
  timelineDelay(seconds: number): void {
    this.delaySeconds = seconds;
  }

  private live(id: string): FakeXTweet | undefined {
    return this.tweets.find((t) => t.id === id && !t.deleted);
  }

  // ---- POST /2/tweets ----

  create(request: XRequest): Answer {
    const body = jsonBody(request);
    onlyProperties(body, '', CREATE_MODELED, CREATE_DECLARED);
    const text = body.text ?? '';
    if (typeof text !== 'string') throw invalidRequest('$.text: string expected', { text: [text] });
    for (const flag of ['made_with_ai', 'paid_partnership'])
      if (body[flag] !== undefined && typeof body[flag] !== 'boolean')
        throw invalidRequest(`$.${flag}: boolean expected`, { [flag]: [body[flag]] });

    let mediaIds: string[] = [];
    if (body.media !== undefined) {
      const media = body.media as Record<string, unknown>;
      if (!media || typeof media !== 'object' || Array.isArray(media)) throw invalidRequest('$.media: object expected');
      onlyProperties(media, 'media', ['media_ids'], MEDIA_DECLARED);
      const ids = media.media_ids;
      if (
        !Array.isArray(ids) ||
        ids.length < 1 ||
        ids.length > 4 ||
        ids.some((id) => typeof id !== 'string' || !ID_PATTERN.test(id))
      )
        throw invalidRequest('$.media.media_ids: 1 to 4 media ids expected', { 'media.media_ids': [ids] });
      mediaIds = ids as string[];
    }

    let parent: FakeXTweet | undefined;
    let replyTo: string | undefined;
    if (body.reply !== undefined) {
      const reply = body.reply as Record<string, unknown>;
      if (!reply || typeof reply !== 'object' || Array.isArray(reply)) throw invalidRequest('$.reply: object expected');
      onlyProperties(reply, 'reply', REPLY_MODELED, REPLY_DECLARED);
      const id = reply.in_reply_to_tweet_id;
      if (typeof id !== 'string' || !ID_PATTERN.test(id))
        throw invalidRequest('$.reply.in_reply_to_tweet_id: a post id expected', {
          'reply.in_reply_to_tweet_id': [id],
        });
      replyTo = id;
    }

    const replySettings = body.reply_settings;
    if (replySettings !== undefined && (typeof replySettings !== 'string' || !REPLY_SETTINGS.includes(replySettings)))
      throw invalidRequest(`$.reply_settings: one of [${REPLY_SETTINGS.join(', ')}] expected`, {
        reply_settings: [replySettings],
      });
    if (text === '' && mediaIds.length === 0) throw invalidRequest('A post needs text or media.', { text: [text] });

    const media = this.media.forPost(mediaIds);
    if (replyTo !== undefined) {
      parent = this.live(replyTo);
      if (!parent) throw forbidden('You attempted to reply to a Tweet that is deleted or not visible to you.');
    }
    if (twitter.parseTweet(text).weightedLength > MAX_WEIGHTED_LENGTH)
      throw invalidRequest(
        'Your Tweet text is too long. For more information on how Twitter determines text length see https://github.com/twitter/twitter-text.',
        { text: [text] },
      );
    // "Posts created via the API are limited to a maximum of 1 cashtag" (docs.x.com, manage Posts): X's
    // answer is not documented, so the fake gives its plain 403.
    if (twitter.extractCashtags(text).length > 1)
      throw forbidden('Posts created via the API may contain at most one cashtag.');
    const normalized = text.normalize('NFC');
    if (
      this.duplicateNext ||
      (normalized !== '' && this.tweets.some((t) => !t.deleted && t.sentText.normalize('NFC') === normalized))
    ) {
      this.duplicateNext = false;
      throw forbidden('You are not allowed to create a Tweet with duplicate content.');
    }

    const id = this.context.newId();
    const shown = render(text);
    const tweet: FakeXTweet = {
      id,
      sentText: text,
      text: shown.text,
      createdAt: new Date(this.context.now()).toISOString(),
      authorId: this.context.account.id,
      conversationId: parent?.conversationId ?? id,
      inReplyToTweetId: parent?.id ?? null,
      inReplyToUserId: parent?.authorId ?? null,
      mediaIds,
      mediaKeys: media.map((m) => m.mediaKey),
      replySettings: replySettings ?? 'everyone',
      madeWithAi: body.made_with_ai === true,
      paidPartnership: body.paid_partnership === true,
      urls: shown.urls,
      deleted: false,
      answerLost: false,
    };
    this.tweets.push(tweet);
    return { status: 201, body: { data: { id, text: tweet.text, edit_history_tweet_ids: [id] } } };
  }

  // ---- DELETE /2/tweets/:id ----

  delete(id: string): Answer {
    if (!ID_PATTERN.test(id)) throw invalidRequest('The id must be a post id.', { id: [id] });
    const tweet = this.live(id);
    if (tweet) tweet.deleted = true;
    return { status: 200, body: { data: { deleted: tweet !== undefined } } };
  }

  // ---- GET /2/tweets/:id ----

  get(id: string, query: URLSearchParams): Answer {
    if (!ID_PATTERN.test(id)) throw invalidRequest('The id must be a post id.', { id: [id] });
    const shape = this.shaper(query);
    const tweet = this.live(id);
    if (!tweet) return notFound('tweet', id, 'id');
    return { status: 200, body: { data: shape.one(tweet), ...shape.includes([tweet]) } };
  }

  // ---- GET /2/users/:id/tweets ----

  timeline(userId: string, query: URLSearchParams): Answer {
    if (!ID_PATTERN.test(userId)) throw invalidRequest('The id must be a user id.', { id: [userId] });
    const shape = this.shaper(query);
    const max = query.has('max_results') ? Number(query.get('max_results')) : 10;
    if (!Number.isInteger(max) || max < 5 || max > 100)
      throw invalidRequest('max_results must be an integer from 5 to 100.', {
        max_results: [query.get('max_results')],
      });
    const ids: Record<string, string | undefined> = {};
    for (const name of ['since_id', 'until_id']) {
      const value = query.get(name) ?? undefined;
      if (value !== undefined && !ID_PATTERN.test(value))
        throw invalidRequest(`${name} must be a post id.`, { [name]: [value] });
      ids[name] = value;
    }
    const times: Record<string, number | undefined> = {};
    for (const name of ['start_time', 'end_time']) {
      const value = query.get(name);
      const at = value === null ? undefined : Date.parse(value);
      if (at !== undefined && Number.isNaN(at))
        throw invalidRequest(`${name} must be an ISO 8601 date-time.`, { [name]: [value] });
      times[name] = at;
    }
    if (times.start_time !== undefined && times.end_time !== undefined && times.start_time >= times.end_time)
      throw invalidRequest('start_time must be earlier than end_time.', { start_time: [query.get('start_time')] });
    if (ids.since_id !== undefined && ids.until_id !== undefined && compareIds(ids.since_id, ids.until_id) >= 0)
      throw invalidRequest('since_id must be less than until_id.', { since_id: [ids.since_id] });
    const exclude = listParameter(query, ['exclude'], ['replies', 'retweets']);
    let before: string | undefined;
    const token = query.get('pagination_token');
    if (token !== null) {
      before = this.pageTokens.get(token);
      if (before === undefined)
        throw invalidRequest('The pagination_token is not valid.', { pagination_token: [token] });
    }
    if (userId !== this.context.account.id) return notFound('user', userId, 'id');

    const now = this.context.now();
    const matching = this.tweets
      .filter((t) => !t.deleted && Date.parse(t.createdAt) + this.delaySeconds * 1000 <= now)
      .filter((t) => !(exclude.includes('replies') && t.inReplyToTweetId !== null))
      .filter((t) => ids.since_id === undefined || compareIds(t.id, ids.since_id) > 0)
      .filter((t) => ids.until_id === undefined || compareIds(t.id, ids.until_id) < 0)
      .filter((t) => times.start_time === undefined || Date.parse(t.createdAt) >= times.start_time)
      .filter((t) => times.end_time === undefined || Date.parse(t.createdAt) <= times.end_time)
      .filter((t) => before === undefined || compareIds(t.id, before) < 0)
      .sort((a, b) => compareIds(b.id, a.id));
    const page = matching.slice(0, max);
    if (page.length === 0) return { status: 200, body: { meta: { result_count: 0 } } };
    let nextToken: string | undefined;
    if (matching.length > page.length) {
      nextToken = randomBytes(24).toString('hex');
      this.pageTokens.set(nextToken, page.at(-1)!.id);
    }
    return {
      status: 200,
      body: {
        data: page.map((t) => shape.one(t)),
        ...shape.includes(page),
        meta: {
          result_count: page.length,
          newest_id: page[0]!.id,
          oldest_id: page.at(-1)!.id,
          ...(nextToken ? { next_token: nextToken } : {}),
        },
      },
    };
  }

  /** How the read endpoints shape a post and its `includes`, from the request's fields and expansions. */
  private shaper(query: URLSearchParams) {
    const fields = listParameter(query, ['tweet.fields', 'post.fields'], TWEET_FIELDS);
    const expansions = listParameter(query, ['expansions'], EXPANSIONS);
    const mediaFields = listParameter(query, ['media.fields'], MEDIA_FIELDS);
    const userFields = listParameter(query, ['user.fields'], USER_FIELDS);
    const one = (tweet: FakeXTweet) => this.shape(tweet, fields);
    const includes = (tweets: FakeXTweet[]): Record<string, unknown> => {
      const result: Record<string, unknown> = {};
      if (expansions.includes('attachments.media_keys')) {
        const keys = [...new Set(tweets.flatMap((t) => t.mediaKeys))];
        if (keys.length > 0) result.media = keys.map((key) => this.mediaObject(key, mediaFields));
      }
      const userExpanded =
        expansions.includes('author_id') ||
        (expansions.includes('in_reply_to_user_id') && tweets.some((t) => t.inReplyToUserId !== null));
      if (userExpanded) result.users = [userObject(this.context.account, userFields, this.tweets)];
      const parents = expansions.includes('referenced_tweets.id')
        ? [...new Set(tweets.flatMap((t) => (t.inReplyToTweetId ? [t.inReplyToTweetId] : [])))]
            .map((id) => this.live(id))
            .filter((t): t is FakeXTweet => t !== undefined)
        : [];
      if (parents.length > 0) result.tweets = parents.map(one);
      return Object.keys(result).length > 0 ? { includes: result } : {};
    };
    return { one, includes };
  }

  /** A post with the fields asked for; those the fake does not model are left out. */
  private shape(tweet: FakeXTweet, fields: string[]): Record<string, unknown> {
    const all: Record<string, unknown> = {
      author_id: tweet.authorId,
      conversation_id: tweet.conversationId,
      created_at: tweet.createdAt,
      reply_settings: tweet.replySettings,
      paid_partnership: tweet.paidPartnership,
      possibly_sensitive: false,
      lang: 'en',
      edit_controls: {
        edits_remaining: 5,
        is_edit_eligible: true,
        editable_until: new Date(Date.parse(tweet.createdAt) + 3600_000).toISOString(),
      },
      public_metrics: {
        retweet_count: 0,
        reply_count: this.tweets.filter((t) => !t.deleted && t.inReplyToTweetId === tweet.id).length,
        like_count: 0,
        quote_count: 0,
        bookmark_count: 0,
        impression_count: 0,
      },
    };
    if (tweet.inReplyToTweetId !== null) {
      all.in_reply_to_user_id = tweet.inReplyToUserId;
      all.referenced_tweets = [{ type: 'replied_to', id: tweet.inReplyToTweetId }];
    }
    if (tweet.mediaKeys.length > 0) all.attachments = { media_keys: tweet.mediaKeys };
    if (tweet.urls.length > 0) {
      let from = 0;
      all.entities = {
        urls: tweet.urls.map((u) => {
          const range = codePointRange(tweet.text, u.url, from);
          from = range.next;
          return {
            start: range.start,
            end: range.end,
            url: u.url,
            expanded_url: u.expandedUrl,
            display_url: u.displayUrl,
          };
        }),
      };
    }
    const shaped: Record<string, unknown> = {
      id: tweet.id,
      text: tweet.text,
      edit_history_tweet_ids: [tweet.id],
    };
    for (const field of fields) if (field in all) shaped[field] = all[field];
    return shaped;
  }

  private mediaObject(mediaKey: string, fields: string[]): Record<string, unknown> {
    const media = this.media.byKey(mediaKey)!;
    const extension = media.mediaType.split('/')[1]!.replace('pjpeg', 'jpeg').replace('quicktime', 'mov');
    const all: Record<string, unknown> = {
      ...(media.altText !== null ? { alt_text: media.altText } : {}),
      ...(media.width !== null ? { width: media.width, height: media.height } : {}),
      ...(media.type === 'photo'
        ? { url: `https://pbs.twimg.com/media/${media.id}.${extension}` }
        : { preview_image_url: `https://pbs.twimg.com/ext_tw_video_thumb/${media.id}/pu/img/preview.jpg` }),
    };
    const shaped: Record<string, unknown> = { media_key: media.mediaKey, type: media.type };
    for (const field of fields) if (field in all) shaped[field] = all[field];
    return shaped;
  }
}

/** The account as a user object of X, with the fields asked for (default `id`, `name`, `username`). */
export function userObject(
  account: FakeXContext['account'],
  fields: string[],
  tweets: FakeXTweet[],
): Record<string, unknown> {
  const all: Record<string, unknown> = {
    created_at: account.createdAt,
    description: account.description,
    profile_image_url: account.profileImageUrl,
    protected: account.protected,
    verified: account.verified,
    verified_type: account.verifiedType,
    subscription_type: account.subscriptionType,
    url: '',
    public_metrics: {
      followers_count: account.followersCount,
      following_count: account.followingCount,
      tweet_count: tweets.filter((t) => !t.deleted).length,
      listed_count: 0,
      like_count: 0,
      media_count: tweets.filter((t) => !t.deleted && t.mediaKeys.length > 0).length,
    },
  };
  const shaped: Record<string, unknown> = { id: account.id, name: account.name, username: account.username };
  for (const field of fields) if (field in all) shaped[field] = all[field];
  return shaped;
}
