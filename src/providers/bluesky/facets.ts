import type { AppBskyRichtextFacet } from '@atproto/api';

export type Facet = AppBskyRichtextFacet.Main;

/**
 * The rich-text facets of a post's text (https://docs.bsky.app/docs/advanced-guides/post-richtext): links,
 * mentions and hashtags, each over its range of the text's UTF-8 bytes, as Bluesky's own library detects
 * them. A mention names an account by its DID, so each handle is resolved (`resolveDid`); one that names
 * nobody stays plain text, as Bluesky's app leaves it.
 */
export async function facetsOf(
  text: string,
  resolveDid: (handle: string) => Promise<string | undefined>,
): Promise<Facet[]> {
  // Loaded when a post is published, not when the server starts: the library brings every lexicon.
  const { AppBskyRichtextFacet, RichText } = await import('@atproto/api');
  const rich = new RichText({ text });
  rich.detectFacetsWithoutResolution();
  const facets: Facet[] = [];
  const dids = new Map<string, string | undefined>();
  for (const facet of rich.facets ?? []) {
    const features: Facet['features'] = [];
    for (const feature of facet.features) {
      if (!AppBskyRichtextFacet.isMention(feature)) {
        features.push(feature);
        continue;
      }
      // Before resolution the library puts the handle where the DID goes.
      const handle = feature.did;
      if (!dids.has(handle)) dids.set(handle, await resolveDid(handle));
      const did = dids.get(handle);
      if (did) features.push({ ...feature, did });
    }
    // Only the range and the features: the library marks some facets with their `$type` and others not.
    if (features.length > 0)
      facets.push({ index: { byteStart: facet.index.byteStart, byteEnd: facet.index.byteEnd }, features });
  }
  return facets;
}

/** The first link of a text, as Bluesky's library detects links (a card shows it). */
export async function firstLink(text: string): Promise<string | undefined> {
  const { AppBskyRichtextFacet, RichText } = await import('@atproto/api');
  const rich = new RichText({ text });
  rich.detectFacetsWithoutResolution();
  for (const facet of rich.facets ?? [])
    for (const feature of facet.features) if (AppBskyRichtextFacet.isLink(feature)) return feature.uri;
  return undefined;
}
