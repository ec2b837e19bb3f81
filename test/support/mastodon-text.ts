/**
 * How Mastodon reads a status's text: the entities its extractor finds (URLs, mentions, hashtags) and
 * the length it counts against the instance's limit. The fake Mastodon counts and renders statuses with
 * these; a test builds a text of a given length with them.
 */

const blank = (text: string) => text.trim() === '';

// URLs need a scheme (Mastodon extracts
// them `without_protocol: false`) and may not follow a letter, a digit or @#$; trailing punctuation
// is not part of them. Mentions are Mastodon's `Account::MENTION_RE`: @user or @user@domain, not
// after a word character, `=` or `/`.
const URL_RE = /(?<![\p{L}\p{N}@#$＠＃])https?:\/\/[^\s<>"]+/giu;
const MENTION_RE =
  /(?<![=/\p{L}\p{N}_])@([a-z0-9_]+(?:[.-]+[a-z0-9_]+)*)(?:@[\p{L}\p{N}_]+(?:[.-]+[\p{L}\p{N}_]+)*)?/giu;
const HASHTAG_RE = /(?<![=/\p{L}\p{N}_#])#([\p{L}\p{N}_]*\p{L}[\p{L}\p{N}_]*)/gu;

export interface Entity {
  kind: 'url' | 'mention' | 'hashtag';
  start: number;
  end: number;
  text: string;
  /** The username of a mention, the name of a hashtag. */
  name: string;
}

/** The URL of a match, without the punctuation that ends a sentence or an unbalanced parenthesis. */
function trimUrl(url: string): string {
  let end = url.length;
  for (;;) {
    const last = url[end - 1]!;
    const open = [...url.slice(0, end)].filter((c) => c === '(').length;
    const close = [...url.slice(0, end)].filter((c) => c === ')').length;
    if (/[.,;:!?'"\]]/.test(last) || (last === ')' && close > open)) end--;
    else break;
  }
  return url.slice(0, end);
}

/** URLs, mentions and hashtags, in order, an entity overlapping an earlier one dropped (as Mastodon does). */
export function entitiesOf(text: string, kinds: Entity['kind'][]): Entity[] {
  const found: Entity[] = [];
  if (kinds.includes('url'))
    for (const match of text.matchAll(URL_RE)) {
      const url = trimUrl(match[0]);
      found.push({ kind: 'url', start: match.index, end: match.index + url.length, text: url, name: url });
    }
  if (kinds.includes('mention'))
    for (const match of text.matchAll(MENTION_RE))
      found.push({
        kind: 'mention',
        start: match.index,
        end: match.index + match[0].length,
        text: match[0],
        name: match[1]!,
      });
  if (kinds.includes('hashtag'))
    for (const match of text.matchAll(HASHTAG_RE))
      found.push({
        kind: 'hashtag',
        start: match.index,
        end: match.index + match[0].length,
        text: match[0],
        name: match[1]!,
      });
  found.sort((a, b) => a.start - b.start);
  const kept: Entity[] = [];
  for (const entity of found) if (kept.every((k) => entity.start >= k.end)) kept.push(entity);
  return kept;
}

const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * The length Mastodon gives a status (its `StatusLengthValidator`): the content warning and the text
 * together, in grapheme clusters, where every URL counts as `urlLength` characters and a mention of
 * another instance's account (`@user@domain`) as `@user`. A blank text counts nothing.
 */
export function mastodonLength(text: string, spoilerText = '', urlLength = 23): number {
  let countable = '';
  if (!blank(text)) {
    let at = 0;
    for (const entity of entitiesOf(text, ['url', 'mention'])) {
      countable += text.slice(at, entity.start) + (entity.kind === 'url' ? 'x'.repeat(urlLength) : `@${entity.name}`);
      at = entity.end;
    }
    countable += text.slice(at);
  }
  return [...segmenter.segment(spoilerText + countable)].length;
}
