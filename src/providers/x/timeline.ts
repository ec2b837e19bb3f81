import twitterText from 'twitter-text';
import type { Channel } from '../../channels/tables.js';
import type { Clock } from '../../core/clock.js';
import { publishError, jsonOf, type XApi } from './api.js';
import type { XTokens } from './tokens.js';

/** What a post sent to X carried, to recognize it among the account's posts. */
export interface SentPost {
  text: string;
  /** X's ids of its media. */
  mediaIds: string[];
  /** The post it replies to; `null` for a thread's first post or a post alone. */
  inReplyTo: string | null;
}

/** Where to look: after the post replied to (ids grow with time), or from a time on. */
export type Window = { sinceId: string } | { startTime: Date };

/** What the account's timeline says: the post, or that it is not there and whether that was read to its end. */
export type Search = { found: string } | { found: undefined; complete: boolean };

interface TimelinePost {
  id: string;
  text: string;
  referenced_tweets?: { type: string; id: string }[];
  attachments?: { media_keys?: string[] };
  entities?: { urls?: { url: string; media_key?: string }[] };
}

interface TimelinePage {
  data?: TimelinePost[];
  meta?: { result_count?: number; next_token?: string };
}

const PAGE_SIZE = 100;
/**
 * Pages read at most: 500 posts in the window. An account that posted more since the post was sent is
 * not searched to the end, and the search says so (X's timeline holds the 3,200 most recent anyway).
 */
const MAX_PAGES = 5;
const PLACEHOLDER = '\u0000';

/**
 * Looks for a post among the account's recent posts (`GET /2/users/:id/tweets`, replies included),
 * since X offers no idempotency key: after an answer that was lost, this is the only way to learn
 * whether X created the post.
 */
export class XTimeline {
  constructor(
    private readonly api: XApi,
    private readonly tokens: XTokens,
    private readonly clock: Clock,
  ) {}

  async find(channel: Channel, sent: SentPost, window: Window, signal: AbortSignal): Promise<Search> {
    const query = new URLSearchParams({
      max_results: String(PAGE_SIZE),
      'tweet.fields': 'referenced_tweets,attachments,entities',
    });
    if ('sinceId' in window) query.set('since_id', window.sinceId);
    // X takes seconds (YYYY-MM-DDTHH:mm:ssZ).
    else query.set('start_time', window.startTime.toISOString().replace(/\.\d{3}Z$/, 'Z'));
    const path = `/2/users/${encodeURIComponent(channel.external_id ?? '')}/tweets`;
    for (let page = 0; page < MAX_PAGES; page += 1) {
      const answer = await this.tokens.authorized(channel, (authorization) =>
        this.api.send(`${path}?${query.toString()}`, { method: 'GET', authorization, signal }),
      );
      if (answer.status !== 200) throw publishError(answer, 'look-up of the account’s recent posts', this.clock);
      const body = jsonOf<TimelinePage>(answer);
      // An answer of `errors` alone (X no longer finds the account) tells nothing of the post.
      if (!body?.meta) return { found: undefined, complete: false };
      const post = (body.data ?? []).find((candidate) => isSent(candidate, sent));
      if (post) return { found: post.id };
      if (!body.meta.next_token) return { found: undefined, complete: true };
      query.set('pagination_token', body.meta.next_token);
    }
    return { found: undefined, complete: false };
  }
}

/**
 * Whether a post of the timeline is the one sent: the same reply (or none), the same media (X's media
 * keys end with the media id: `3_<id>`), and the same text as X shows it. X shows a text otherwise than
 * it was sent: every URL becomes a t.co link (the link of attached media is appended as one too), and
 * `&`, `<` and `>` are HTML entities; so URLs are compared as placeholders, media links dropped and
 * entities decoded.
 */
function isSent(post: TimelinePost, sent: SentPost): boolean {
  const repliesTo = post.referenced_tweets?.find((reference) => reference.type === 'replied_to')?.id ?? null;
  if (repliesTo !== sent.inReplyTo) return false;
  const media = (post.attachments?.media_keys ?? []).map((key) => key.slice(key.indexOf('_') + 1)).sort();
  if (media.join(',') !== [...sent.mediaIds].sort().join(',')) return false;
  return shownText(post) === sentText(sent.text);
}

function sentText(text: string): string {
  const normalized = text.normalize('NFC');
  let result = '';
  let at = 0;
  for (const { indices } of twitterText.extractUrlsWithIndices(normalized)) {
    result += normalized.slice(at, indices[0]) + PLACEHOLDER;
    at = indices[1];
  }
  return (result + normalized.slice(at)).trim();
}

function shownText(post: TimelinePost): string {
  let text = post.text.normalize('NFC');
  for (const link of post.entities?.urls ?? []) {
    text = link.media_key !== undefined ? text.replace(link.url, '') : text.replace(link.url, PLACEHOLDER);
  }
  return text.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&').trim();
}
