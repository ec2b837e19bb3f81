/**
 * The characters LinkedIn's "little text" format, in which a post's commentary is written, reserves for
 * its markup (mentions `@[name](urn)`, hashtags `{hashtag|#|tag}`, templates): each one meant as itself
 * is escaped with a backslash, the backslash included, or LinkedIn drops what follows it or refuses the
 * post (Posts API, "Little Text Format").
 */
const RESERVED = /[\\|{}@[\]()<>#*_~]/g;

/** A text as commentary in little text, published as written. */
export function littleText(text: string): string {
  return text.replace(RESERVED, (character) => `\\${character}`);
}
