import { kindOf, sniffContentType, SNIFF_BYTES } from '../../media/media-types.js';
import { readBody, type OutboundClient } from '../../net/outbound-client.js';
import type { RemoteResponse } from '../../net/remote-fetch.js';
import { plainText } from '../network-text.js';

/** A page's head is near its start; a page larger than this is read no further. */
const PAGE_MAX_BYTES = 512 * 1024;
/** The app.bsky.embed.external lexicon: a card's thumbnail is a blob of at most 1,000,000 bytes. */
export const CARD_THUMB_MAX_BYTES = 1_000_000;
/** A card is a nicety: a slow page goes without one rather than holding the post back. */
const READ_SECONDS = 10;
/** Bluesky's app shows a few lines of a card; longer texts are cut here. */
const TITLE_MAX = 300;
const DESCRIPTION_MAX = 1000;

/** What a card of a link shows: the page's title and description, and its image. */
export interface LinkPreview {
  uri: string;
  title: string;
  description: string;
  image?: { bytes: Buffer; contentType: string };
}

/**
 * The card of the page at `uri`, as Bluesky's guide to website cards describes it
 * (https://docs.bsky.app/docs/advanced-guides/posts#website-card-embeds): the page's Open Graph
 * `og:title`, `og:description` and `og:image` (its `<title>` and `description` when it has none). The
 * page and its image are URLs a user wrote, fetched through the outbound address policy. A page that
 * cannot be read, or is no HTML, has no card (`undefined`); an image that cannot be read, is no image or
 * is too large leaves the card without one.
 */
export async function linkPreview(outbound: OutboundClient, uri: string): Promise<LinkPreview | undefined> {
  let page: { html: string; url: URL } | undefined;
  try {
    page = await outbound.get(
      uri,
      async (response) => {
        const html = isHtml(response) ? await readHead(response) : undefined;
        return html === undefined ? undefined : { html, url: response.url };
      },
      { maxDurationSeconds: READ_SECONDS, accept: 'text/html' },
    );
  } catch {
    return undefined;
  }
  if (!page) return undefined;
  const meta = metaOf(page.html);
  const title = meta.get('og:title') ?? meta.get('twitter:title') ?? titleOf(page.html) ?? '';
  const description = meta.get('og:description') ?? meta.get('description') ?? meta.get('twitter:description') ?? '';
  const imageUrl = meta.get('og:image') ?? meta.get('twitter:image');
  const image = imageUrl ? await thumbnail(outbound, imageUrl, page.url) : undefined;
  return {
    uri,
    title: title.slice(0, TITLE_MAX),
    description: description.slice(0, DESCRIPTION_MAX),
    ...(image ? { image } : {}),
  };
}

function isHtml(response: RemoteResponse): boolean {
  const type = response.body.headers['content-type'] ?? '';
  return /^\s*(text\/html|application\/xhtml\+xml)/i.test(type);
}

/** The page's start, as text; a longer page is cut (its head, where the cards' tags are, comes first). */
async function readHead(response: RemoteResponse): Promise<string> {
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of response.body) {
    chunks.push(chunk as Buffer);
    received += (chunk as Buffer).length;
    if (received >= PAGE_MAX_BYTES) break;
  }
  return Buffer.concat(chunks).subarray(0, PAGE_MAX_BYTES).toString('utf8');
}

/** The `<meta>` tags of a page by their `property` or `name` (lower-cased), their `content` as plain text. */
function metaOf(html: string): Map<string, string> {
  const meta = new Map<string, string>();
  for (const [tag] of html.matchAll(/<meta\b[^>]*>/gi)) {
    const attributes = new Map<string, string>();
    for (const match of tag.matchAll(/([a-zA-Z_:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/g))
      attributes.set(match[1]!.toLowerCase(), match[2] ?? match[3] ?? match[4] ?? '');
    const key = (attributes.get('property') ?? attributes.get('name'))?.toLowerCase();
    const content = attributes.get('content');
    // The first of a kind counts, as in the Open Graph protocol's arrays.
    if (key && content !== undefined && !meta.has(key)) meta.set(key, plainText(content));
  }
  return meta;
}

function titleOf(html: string): string | undefined {
  const match = /<title\b[^>]*>([\s\S]*?)<\/title>/i.exec(html);
  return match ? plainText(match[1]!) : undefined;
}

async function thumbnail(
  outbound: OutboundClient,
  address: string,
  page: URL,
): Promise<{ bytes: Buffer; contentType: string } | undefined> {
  let url: string;
  try {
    url = new URL(address, page).href;
  } catch {
    return undefined;
  }
  try {
    const bytes = await outbound.get(url, (response) => readBody(response, CARD_THUMB_MAX_BYTES), {
      maxDurationSeconds: READ_SECONDS,
      accept: 'image/*',
    });
    if (!bytes) return undefined;
    // What the bytes are, not what the server says they are.
    const { mediaType } = await sniffContentType(bytes.subarray(0, SNIFF_BYTES));
    if (!mediaType || kindOf(mediaType) !== 'image') return undefined;
    return { bytes, contentType: mediaType };
  } catch {
    return undefined;
  }
}
