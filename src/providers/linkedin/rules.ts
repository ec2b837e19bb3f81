import type { ErrorDetail } from '../../core/errors.js';
import type { ContentLimit, SettingsCheck, SettingsOf, StoredSettingsOf } from '../provider-adapter.js';
import { textPostProblems, type TextNetworkLimits } from '../text-rules.js';

const MB = 1024 * 1024;

// A LinkedIn post (Posts API): commentary of up to 3,000 characters, with one image, a multi-image post
// of 2 to 20 images (MultiImage API), or one video. Images (Images API): JPEG, PNG or GIF, under
// 36,152,320 pixels, which LinkedIn's help gives as up to 5 MB for a post's image. Videos (Videos API):
// MP4 of 75 KB to 500 MB lasting 3 seconds to 30 minutes.
export const LINKEDIN_LIMITS: TextNetworkLimits = {
  network: 'LinkedIn',
  content: { max: 3000, unit: 'characters', becomes: 'commentary', count: (text) => text.length },
  maxImages: 20,
  image: { types: ['image/jpeg', 'image/png', 'image/gif'], maxBytes: 5 * MB },
  video: { types: ['video/mp4'], maxBytes: 500 * MB, minDurationMs: 3000, maxDurationMs: 30 * 60_000 },
};
export const LINKEDIN_CONTENT_LIMIT: ContentLimit = LINKEDIN_LIMITS.content;
/**
 * A document post (Documents API): one PDF alone, of at most 100 MB and 300 pages, under a title. LinkedIn
 * takes PPT, PPTX, DOC and DOCX too; this server stores PDF only.
 */
export const LINKEDIN_DOCUMENT_LIMITS = { maxBytes: 100 * MB, maxPages: 300 };
/** The smallest video the Videos API takes. */
export const LINKEDIN_VIDEO_MIN_BYTES = 75 * 1024;
/** A comment's text, as LinkedIn's comment box takes it. */
export const LINKEDIN_COMMENT_MAX = 1250;
/** An image's alternative text in a post's content (Posts API, `altText`). */
export const LINKEDIN_ALT_TEXT_MAX = 4086;

/**
 * A post's text and media by LinkedIn's rules; a video under LinkedIn's smallest; and a visibility to
 * connections only from a member (a company page has no connections: LinkedIn refuses it there).
 */
export function linkedinProblems({ item, settings, path, channel }: SettingsCheck<'linkedin'>): Promise<ErrorDetail[]> {
  const documents = item.media?.filter((media) => media.kind === 'document').length ?? 0;
  // A document post is judged by the document's rules alone: the image and video rules would misname it.
  const problems = [
    ...textPostProblems(documents > 0 ? { ...item, media: undefined } : item, LINKEDIN_LIMITS),
    ...documentProblems(item, documents),
  ];
  if (settings.documentTitle !== undefined && documents === 0)
    problems.push({
      path: `${path}.documentTitle`,
      message:
        'A document title is for a post with a document (PDF), ' +
        `which this one has not (channel ${item.channelId}).`,
    });
  item.media?.forEach((media, index) => {
    if (media.kind === 'video' && Number(media.size) < LINKEDIN_VIDEO_MIN_BYTES)
      problems.push({
        path: `${item.paths.mediaIds}[${index}]`,
        message:
          `LinkedIn takes videos of at least 75 KB (channel ${item.channelId}); ` +
          `this one has ${Number(media.size).toLocaleString('en-US')} bytes.`,
      });
  });
  if ((item.media?.length ?? 0) === 0 && item.content.trim() === '')
    problems.push({
      path: item.paths.content,
      message: `A LinkedIn post has commentary, media or both (channel ${item.channelId}).`,
    });
  if (settings.visibility === 'CONNECTIONS' && isOrganization(channel.external_id))
    problems.push({
      path: `${path}.visibility`,
      message: 'A company page has no connections: its posts are PUBLIC or LOGGED_IN.',
    });
  return Promise.resolve(problems);
}

/** A document post's media: the document alone, within LinkedIn's size and pages. */
function documentProblems(item: SettingsCheck<'linkedin'>['item'], documents: number): ErrorDetail[] {
  if (documents === 0 || !item.media) return [];
  const problems: ErrorDetail[] = [];
  if (item.media.length > 1)
    problems.push({
      path: item.paths.mediaIds,
      message:
        'LinkedIn takes a document (PDF) alone in a post, without other media or documents ' +
        `(channel ${item.channelId}); ` +
        `this post has ${item.media.length} media.`,
    });
  const { maxBytes, maxPages } = LINKEDIN_DOCUMENT_LIMITS;
  item.media.forEach((media, index) => {
    if (media.kind !== 'document') return;
    const where = `${item.paths.mediaIds}[${index}]`;
    const bytes = Number(media.size);
    if (bytes > maxBytes)
      problems.push({
        path: where,
        message:
          `LinkedIn takes documents of up to 100 MB (${maxBytes.toLocaleString('en-US')} bytes) ` +
          `(channel ${item.channelId}); ` +
          `this one has ${bytes.toLocaleString('en-US')} bytes.`,
      });
    if (media.page_count !== null && media.page_count > maxPages)
      problems.push({
        path: where,
        message:
          `LinkedIn takes documents of up to ${maxPages} pages (channel ${item.channelId}); ` +
          `this one has ${media.page_count}.`,
      });
  });
  return problems;
}

/** Whether a channel's account is a company page (`urn:li:organization:…`) rather than a member. */
export function isOrganization(externalId: string | null): boolean {
  return externalId?.startsWith('urn:li:organization:') ?? false;
}

export const linkedinDefaults = (settings: SettingsOf<'linkedin'>): StoredSettingsOf<'linkedin'> => ({
  ...settings,
  visibility: settings.visibility ?? 'PUBLIC',
  disableReshare: settings.disableReshare ?? false,
});
