import type { Channel } from '../channels/tables.js';
import type { Providers } from '../providers/provider-adapter.js';
import { UNIT_WORDS, type TextCounter } from './composer-counts.js';

/**
 * Where a network takes the card of a link from, as its app shows it: the first URL of a text
 * (Bluesky's card unless its setting says no, X's and Mastodon's previews, Threads' `link_attachment`,
 * each on a post without media), or the post's link setting (a Facebook link post, a Pin's
 * destination). The other networks show a link as text.
 */
const LINK_CARDS: Partial<Record<Channel['provider'], 'text' | 'setting'>> = {
  bluesky: 'text',
  x: 'text',
  mastodon: 'text',
  threads: 'text',
  facebook: 'setting',
  pinterest: 'setting',
};

/** A channel as the composer's preview shows a post on it: its network's limit, thread, comment and card. */
export interface PreviewChannel {
  id: string;
  name: string;
  network: string;
  provider: string;
  /** The counter the page's counts of this channel come under. */
  counter: string;
  max: number;
  unitWords: string;
  /** The most parts a thread may have, 1 where the network takes none. */
  maxParts: number;
  comment: boolean;
  card: 'text' | 'setting' | null;
}

export function previewChannels(providers: Providers, channels: Channel[], counters: TextCounter[]): PreviewChannel[] {
  return channels.flatMap((channel) => {
    const counter = counters.find((candidate) => candidate.channels.includes(channel.id));
    if (!counter) return [];
    const network = providers[channel.provider];
    return [
      {
        id: channel.id,
        name: channel.name,
        network: network.name,
        provider: channel.provider,
        counter: counter.key,
        max: counter.limit.max,
        unitWords: UNIT_WORDS[counter.limit.unit],
        maxParts: network.thread?.maxParts ?? 1,
        comment: network.firstComment !== undefined,
        card: LINK_CARDS[channel.provider] ?? null,
      },
    ];
  });
}
