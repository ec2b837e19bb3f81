/**
 * How Threads counts a post's text against its 500 characters (developers.facebook.com, Threads posts,
 * "Limitations"): each grapheme is one character, but an emoji counts as many as its UTF-8 bytes. The fake
 * Threads counts text with this; a test builds a text of a given length with it.
 */
export function threadsTextLength(text: string): number {
  let length = 0;
  for (const { segment } of new Intl.Segmenter('en', { granularity: 'grapheme' }).segment(text))
    length += EMOJI.test(segment) ? Buffer.byteLength(segment, 'utf8') : 1;
  return length;
}

/** A grapheme that is an emoji: a pictograph (with its modifiers and joiners) or a flag's regional indicators. */
const EMOJI = /\p{Extended_Pictographic}|\p{Regional_Indicator}/u;
