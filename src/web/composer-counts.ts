import type { Channel } from '../channels/tables.js';
import { POST_CONTENT_MAX_LENGTH } from '../core/contract.js';
import type { ContentLimit, Providers } from '../providers/provider-adapter.js';
import { graphemeCount } from '../providers/text-rules.js';

/**
 * One count the composer shows under every part's text: a network's limit, or a channel's where the
 * channel's own server sets it (a Mastodon instance's), and the channels it counts for.
 */
export interface TextCounter {
  /** What the page knows the counter by: the network (`x`), or `<network>-<channel id>`. */
  key: string;
  /** "X post", "Mastodon status on Acme": what the text becomes, and where. */
  label: string;
  limit: ContentLimit;
  channels: string[];
}

const THE_CONTRACTS: ContentLimit = { max: POST_CONTENT_MAX_LENGTH, unit: 'characters', becomes: 'text' };

/** The unit of a limit in the words the page shows. */
export const UNIT_WORDS: Record<ContentLimit['unit'], string> = {
  characters: 'characters',
  bytes: 'bytes',
  graphemes: 'characters',
  weighted: 'characters as X weighs them',
};

/**
 * The counters of the channels a composer offers: one per network, and one per channel of a network
 * whose limit is the channel's own, each counting as the network's rules count (`ContentLimit.count`).
 */
export async function textCounters(providers: Providers, channels: Channel[]): Promise<TextCounter[]> {
  const counters = new Map<string, TextCounter>();
  for (const channel of channels) {
    const network = providers[channel.provider];
    const own = network.channelContentLimit ? await network.channelContentLimit(channel) : undefined;
    const limit = own ?? network.contentLimit ?? THE_CONTRACTS;
    const key = own ? `${channel.provider}-${channel.id}` : channel.provider;
    const counter = counters.get(key);
    if (counter) counter.channels.push(channel.id);
    else {
      const label = `${network.name} ${limit.becomes}${own ? ` on ${channel.name}` : ''}`;
      counters.set(key, { key, label, limit, channels: [channel.id] });
    }
  }
  return [...counters.values()];
}

/** A text's length against a limit, counted as the network counts it. */
export function countText(limit: ContentLimit, text: string): number {
  if (limit.count) return limit.count(text);
  if (limit.unit === 'bytes') return Buffer.byteLength(text, 'utf8');
  return limit.unit === 'graphemes' ? graphemeCount(text) : text.length;
}

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * How much of a text a limit lets through, in UTF-16 code units: all of it when it fits, else the
 * longest start of it that ends between two characters as a reader sees them and counts within the
 * limit as the network counts it: where the composer's preview cuts a text that is too long.
 */
export function fittingLength(limit: ContentLimit, text: string): number {
  if (countText(limit, text) <= limit.max) return text.length;
  const ends = [0, ...Array.from(graphemes.segment(text), (piece) => piece.index + piece.segment.length)];
  // Counts only grow as a text gets longer: the last end that fits is found by halving.
  let low = 0;
  let high = ends.length - 1;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (countText(limit, text.slice(0, ends[middle])) <= limit.max) low = middle;
    else high = middle - 1;
  }
  return ends[low]!;
}

/**
 * The counters of a first comment: one per network of the channels offered that takes comments, by the
 * network's own limit of a comment, counted in UTF-16 code units as the API's check counts it.
 */
export function commentCounters(providers: Providers, channels: Channel[]): TextCounter[] {
  const counters = new Map<string, TextCounter>();
  for (const channel of channels) {
    const network = providers[channel.provider];
    if (!network.firstComment) continue;
    const counter = counters.get(channel.provider);
    if (counter) counter.channels.push(channel.id);
    else
      counters.set(channel.provider, {
        key: channel.provider,
        label: `${network.name} comment`,
        limit: { max: network.firstComment.maxLength, unit: 'characters', becomes: 'comment' },
        channels: [channel.id],
      });
  }
  return [...counters.values()];
}
