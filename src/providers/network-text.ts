/** The entities a network's message may use by name, beyond numeric ones. */
const NAMED_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

/**
 * A network's message as the plain text it means. Networks write some messages as HTML (Google's
 * `quotaExceeded`: `you have exceeded your <a href="/youtube/v3/getting-started#quota">quota</a>.`):
 * this server stores and shows messages as text, which the pages escape, so the tags are dropped and
 * the entities decoded here rather than shown as markup. Only what looks like a tag (`<` and a letter,
 * or `</`) is dropped: a `<` in words ("contains < or >") stays.
 */
export function plainText(message: string): string {
  return message
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(/<\/?[a-z][^<>]*>/gi, '')
    .replace(/&(#\d{1,7}|#x[0-9a-f]{1,6}|[a-z]+);/gi, (entity, name: string) => {
      if (!name.startsWith('#')) return NAMED_ENTITIES[name.toLowerCase()] ?? entity;
      const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : Number(name.slice(1));
      // NUL, surrogates and numbers beyond Unicode are no characters (the HTML standard's replacement).
      return code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)
        ? '\uFFFD'
        : String.fromCodePoint(code);
    })
    .replace(/\s+/g, ' ')
    .trim();
}
