import type { Request } from 'express';
import type { components } from '../../generated/public-v1.js';
import type { Channel } from '../channels/tables.js';
import type { ErrorDetail } from '../core/errors.js';
import type { PostRow } from '../posts/post-body.js';
import type { RepeatValues } from './composer-repeat.js';

type ProviderSettings = components['schemas']['ProviderSettings'];

/** One part of a post as the form holds it: the post's own, or one of its thread's. */
export interface PartValues {
  content: string;
  media: string[];
  /** The alternative text typed for each image, by media id; images left without one are absent. */
  altTexts: Record<string, string>;
}

/** What the composer's form holds, as typed: the page shows it back as it was when something is refused. */
export interface ComposerValues {
  channels: string[];
  /** The post's own part first, then the parts of its thread, in order. */
  parts: PartValues[];
  date: string;
  time: string;
  /** Each channel's settings fields by name (`title`, `privacyLevel`, `allowComment`…), as the form sent them. */
  settings: Record<string, Record<string, string>>;
  /** The first comment's text, empty for none: sent to the chosen channels whose network takes comments. */
  firstComment: string;
  /** How a new post repeats (a series), when the form offers it. */
  repeat?: RepeatValues;
}

export const emptyPart = (): PartValues => ({ content: '', media: [], altTexts: {} });

/** Every value of a repeatable form field (checkboxes). */
function fieldValues(req: Request, name: string): string[] {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

const text = (req: Request, name: string): string => fieldValues(req, name)[0] ?? '';

const SETTINGS_FIELD = /^settings\.([A-Za-z0-9_-]{1,100})\.([A-Za-z]{1,40})$/;
// The accounts tagged on one image of an Instagram post: `settings.<channel>.userTags.<media id>`, kept among
// the channel's fields as `userTags.<media id>`.
const USER_TAGS_FIELD = /^settings\.([A-Za-z0-9_-]{1,100})\.(userTags\.[A-Za-z0-9_-]{1,100})$/;
const USER_TAGS_PREFIX = 'userTags.';
// A part of the thread has its fields under `thread.<index>.`; more than the contract's 24 parts would be
// refused anyway, so a larger index is not one of the form's.
const THREAD_FIELD = /^thread\.(\d{1,2})\./;
const ALT_TEXT_FIELD = /^alt\.([A-Za-z0-9_-]{1,100})$/;
const POSITION_FIELD = /^position\.([A-Za-z0-9_-]{1,100})$/;

/** The prefix of a part's field names: none for the post's own part, `thread.<i>.` for the thread's. */
export const partPrefix = (part: number): string => (part === 0 ? '' : `thread.${part - 1}.`);

function readPart(req: Request, part: number): PartValues {
  const prefix = partPrefix(part);
  const chosen = [...new Set(fieldValues(req, `${prefix}media`))];
  const altTexts: Record<string, string> = {};
  const positions = new Map<string, number>();
  for (const name of Object.keys((req.body as Record<string, unknown> | undefined) ?? {})) {
    if (!name.startsWith(prefix)) continue;
    const position = POSITION_FIELD.exec(name.slice(prefix.length));
    const typed = position ? Number(text(req, name)) : NaN;
    if (position && Number.isFinite(typed) && text(req, name).trim() !== '') positions.set(position[1]!, typed);
    const alt = ALT_TEXT_FIELD.exec(name.slice(prefix.length));
    const altText = alt ? text(req, name).replace(/\r\n/g, '\n') : '';
    // An alternative text counts for an image chosen in that part only, as the page shows it.
    if (alt && altText !== '' && chosen.includes(alt[1]!)) altTexts[alt[1]!] = altText;
  }
  const media = inPositionOrder(chosen, positions);
  return { content: text(req, `${prefix}content`).replace(/\r\n/g, '\n'), media, altTexts };
}

/**
 * The chosen media in the order of the positions typed next to them (a carousel's order): the ones
 * without a position after those with one, each group in the order the page shows them.
 */
function inPositionOrder(chosen: string[], positions: Map<string, number>): string[] {
  const at = (id: string) => positions.get(id) ?? Infinity;
  return chosen
    .map((id, shown) => ({ id, shown }))
    .sort((a, b) => at(a.id) - at(b.id) || a.shown - b.shown)
    .map(({ id }) => id);
}

/**
 * The form's fields as typed. `fixed` are the parts that are no longer the form's to change (the
 * published parts of a thread being edited): they stand first, as they are, and the form has no fields
 * for them.
 */
export function readComposerForm(req: Request, fixed: PartValues[] = []): ComposerValues {
  const settings: Record<string, Record<string, string>> = {};
  let threadParts = 0;
  for (const name of Object.keys((req.body as Record<string, unknown> | undefined) ?? {})) {
    const thread = THREAD_FIELD.exec(name);
    if (thread) threadParts = Math.max(threadParts, Number(thread[1]) + 1);
    const match = SETTINGS_FIELD.exec(name) ?? USER_TAGS_FIELD.exec(name);
    if (!match) continue;
    (settings[match[1]!] ??= {})[match[2]!] = text(req, name);
  }
  const parts = [...fixed];
  for (let part = fixed.length; part < threadParts + 1; part++) parts.push(readPart(req, part));
  return {
    channels: [...new Set(fieldValues(req, 'channel'))],
    parts,
    date: text(req, 'date'),
    time: text(req, 'time'),
    settings,
    firstComment: text(req, 'firstComment').replace(/\r\n/g, '\n'),
    repeat: { choice: text(req, 'repeat'), rule: text(req, 'repeat_rule'), until: text(req, 'repeat_until') },
  };
}

/**
 * A channel's settings as the contract has them, from the form's fields; a choice the user did not
 * make is left out, so the contract's check names it. Sandbox posts carry none.
 */
export function settingsFrom(
  channel: Pick<Channel, 'provider'>,
  fields: Record<string, string> = {},
): ProviderSettings | undefined {
  const ticked = (name: string) => fields[name] === 'on';
  const chosen = <T extends string>(name: string) => (fields[name] ? { [name]: fields[name] as T } : {});
  switch (channel.provider) {
    case 'sandbox':
      // Offered on the edit form only: elsewhere a sandbox post keeps its default settings.
      if (!fields.outcome) return undefined;
      return {
        __type: 'sandbox',
        ...chosen('outcome'),
        // Kept as the post had it: the part a failing thread fails at.
        ...(/^\d{1,2}$/.test(fields.failingPart ?? '') ? { failingPart: Number(fields.failingPart) } : {}),
      };
    case 'youtube': {
      const tags = listed(fields.tags);
      return {
        __type: 'youtube',
        title: fields.title ?? '',
        ...(fields.description ? { description: fields.description.replace(/\r\n/g, '\n') } : {}),
        ...chosen('privacyStatus'),
        ...(fields.madeForKids === 'yes'
          ? { madeForKids: true }
          : fields.madeForKids === 'no'
            ? { madeForKids: false }
            : {}),
        ...(tags.length > 0 ? { tags } : {}),
      } as ProviderSettings;
    }
    case 'tiktok':
      return {
        __type: 'tiktok',
        ...chosen('postMode'),
        ...chosen('privacyLevel'),
        disableComment: !ticked('allowComment'),
        disableDuet: !ticked('allowDuet'),
        disableStitch: !ticked('allowStitch'),
        brandContentToggle: ticked('brandContentToggle'),
        brandOrganicToggle: ticked('brandOrganicToggle'),
        isAiGenerated: ticked('isAiGenerated'),
      } as ProviderSettings;
    case 'mastodon':
      return {
        __type: 'mastodon',
        ...chosen('visibility'),
        ...(fields.spoilerText ? { spoilerText: fields.spoilerText } : {}),
        sensitive: ticked('sensitive'),
        ...chosen('language'),
      };
    case 'x':
      return { __type: 'x', ...chosen('replySettings') };
    case 'facebook':
      return { __type: 'facebook', ...(fields.link?.trim() ? { link: fields.link.trim() } : {}) };
    case 'instagram': {
      // Written as Instagram shows them, @ or not: the contract takes the usernames alone.
      const collaborators = listed(fields.collaborators).map((name) => name.replace(/^@/, ''));
      const { tags: userTags } = readUserTags(fields);
      return {
        __type: 'instagram',
        ...chosen('postType'),
        // Only a reel is shared to the feed or not; other posts keep the default.
        ...(fields.postType === 'reel' ? { shareToFeed: ticked('shareToFeed') } : {}),
        ...(collaborators.length > 0 ? { collaborators } : {}),
        ...(userTags.length > 0 ? { userTags } : {}),
      };
    }
    case 'threads':
      return { __type: 'threads', ...chosen('replyControl') };
    case 'linkedin':
      return {
        __type: 'linkedin',
        ...chosen('visibility'),
        disableReshare: ticked('disableReshare'),
        ...(fields.documentTitle?.trim() ? { documentTitle: fields.documentTitle.trim() } : {}),
      };
    case 'pinterest': {
      // One choice names the board, or a section of it: `<board id>/<section id>`.
      const [boardId, boardSectionId] = (fields.board ?? '').split('/');
      const cover = fields.coverFrame?.trim() ?? '';
      return {
        __type: 'pinterest',
        ...(boardId ? { boardId } : {}),
        ...(boardSectionId ? { boardSectionId } : {}),
        ...(fields.title?.trim() ? { title: fields.title.trim() } : {}),
        ...(fields.link?.trim() ? { link: fields.link.trim() } : {}),
        ...(cover !== '' ? { coverImageKeyFrameTime: Number(cover) } : {}),
      } as ProviderSettings;
    }
    case 'bluesky': {
      const languages = listed(fields.languages);
      return {
        __type: 'bluesky',
        ...(languages.length > 0 ? { languages } : {}),
        ...(fields.linkCard === 'yes' ? { linkCard: true } : fields.linkCard === 'no' ? { linkCard: false } : {}),
      };
    }
    default:
      return undefined;
  }
}

type UserTag = components['schemas']['InstagramUserTag'];

/**
 * One tag as the form writes it: a username (an @ or not), then where on the image, as percentages from
 * its left and from its top (`@ada 30 70`, `ada 30% 70%`); without them, the image's middle.
 */
const USER_TAG = /^@?(\S+?)(?:\s+(\d{1,3}(?:\.\d+)?)%?\s*[\s;/]\s*(\d{1,3}(?:\.\d+)?)%?)?$/;

/**
 * An Instagram post's user tags from the form's field of each image (its tags separated by commas), in
 * the order of the fields, and the tags that could not be read, each with the image it was typed for.
 * What is read is left to the contract's check (a username's letters, a position within the image).
 */
export function readUserTags(fields: Record<string, string>): {
  tags: UserTag[];
  unreadable: { mediaId: string; message: string }[];
} {
  const tags: UserTag[] = [];
  const unreadable: { mediaId: string; message: string }[] = [];
  for (const [field, value] of Object.entries(fields)) {
    if (!field.startsWith(USER_TAGS_PREFIX)) continue;
    const mediaId = field.slice(USER_TAGS_PREFIX.length);
    for (const written of value.split(/[,\n]/).map((tag) => tag.trim())) {
      if (written === '') continue;
      const tag = USER_TAG.exec(written);
      if (!tag) {
        unreadable.push({
          mediaId,
          message:
            `“${written}” is not a username followed by where on the image, ` +
            'as @ada 30 70 (percent from the left, then from the top).',
        });
        continue;
      }
      const share = (percent: string | undefined) => (percent === undefined ? 0.5 : Number(percent) / 100);
      tags.push({ mediaId, username: tag[1]!, x: share(tag[2]), y: share(tag[3]) });
    }
  }
  return { tags, unreadable };
}

/**
 * The image each user tag of an Instagram channel's settings names, by the tag's index as sent (the tags
 * read, then those that could not be), so that a problem with `userTags[i]` is shown next to its image.
 */
export function userTagImages(values: Pick<ComposerValues, 'settings'>, channelIds: string[]): Map<string, string[]> {
  const images = new Map<string, string[]>();
  for (const channelId of channelIds) {
    const { tags, unreadable } = readUserTags(values.settings[channelId] ?? {});
    if (tags.length + unreadable.length > 0)
      images.set(channelId, [...tags.map((tag) => tag.mediaId), ...unreadable.map((tag) => tag.mediaId)]);
  }
  return images;
}

/**
 * The tags of the Instagram channels chosen that could not be read, as problems of their settings
 * (`<prefix>settings.userTags[i]`, the index after those of the tags read, as `userTagImages` counts).
 */
export function unreadableUserTags(
  values: Pick<ComposerValues, 'settings'>,
  channels: { id: string; provider: string }[],
  prefix: (index: number) => string,
): ErrorDetail[] {
  return channels.flatMap((channel, index) => {
    if (channel.provider !== 'instagram') return [];
    const { tags, unreadable } = readUserTags(values.settings[channel.id] ?? {});
    return unreadable.map((tag, i) => ({
      path: `${prefix(index)}settings.userTags[${tags.length + i}]`,
      message: tag.message,
    }));
  });
}

/** The items of a field that lists them separated by commas (tags, languages). */
const listed = (field: string | undefined): string[] =>
  (field ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);

/**
 * The parts of a post already on the network, in order: its own once published, then its thread's
 * published parts. An edit sends them as they are (the API refuses to change them, 409).
 */
export function publishedParts(
  post: Pick<PostRow, 'content' | 'media_ids' | 'alt_texts' | 'thread' | 'release_id' | 'release_url'>,
): (PartValues & { releaseUrl: string | null })[] {
  if (post.release_id === null) return [];
  const own = { content: post.content, media: post.media_ids, altTexts: post.alt_texts, releaseUrl: post.release_url };
  const thread = [];
  for (const part of post.thread) {
    if (part.releaseId === null) break;
    thread.push({
      content: part.content,
      media: part.mediaIds,
      altTexts: part.altTexts ?? {},
      releaseUrl: part.releaseUrl,
    });
  }
  return [own, ...thread];
}

/** A stored post's parts as the form's. */
export function storedParts(post: Pick<PostRow, 'content' | 'media_ids' | 'alt_texts' | 'thread'>): PartValues[] {
  return [
    { content: post.content, media: post.media_ids, altTexts: post.alt_texts },
    ...post.thread.map((part) => ({ content: part.content, media: part.mediaIds, altTexts: part.altTexts ?? {} })),
  ];
}

type PartInput = { content: string; mediaIds: string[]; altTexts?: Record<string, string> };

/**
 * A part as the contract has it. Its alternative texts go only to a network that takes them (the API
 * refuses them elsewhere), and only when there are some.
 */
export function partInput(part: PartValues, takesAltText: boolean): PartInput {
  const altTexts = takesAltText && Object.keys(part.altTexts).length > 0 ? { altTexts: part.altTexts } : {};
  return { content: part.content, mediaIds: part.media, ...altTexts };
}

/** A stored post's settings as the form's fields, for editing it. */
export function settingsFields(post: Pick<PostRow, 'settings'>): Record<string, string> {
  const settings = (post.settings ?? {}) as Record<string, unknown>;
  const fields: Record<string, string> = {};
  for (const name of [
    'title',
    'description',
    'privacyStatus',
    'postMode',
    'privacyLevel',
    'visibility',
    'spoilerText',
    'language',
    'replySettings',
    'link',
    'postType',
    'replyControl',
    'outcome',
    'documentTitle',
  ]) {
    if (typeof settings[name] === 'string') fields[name] = settings[name];
  }
  for (const name of ['madeForKids', 'linkCard'])
    if (typeof settings[name] === 'boolean') fields[name] = settings[name] ? 'yes' : 'no';
  for (const name of ['tags', 'languages', 'collaborators']) {
    const list = settings[name];
    if (Array.isArray(list)) fields[name] = list.join(', ');
  }
  for (const [field, setting] of [
    ['allowComment', 'disableComment'],
    ['allowDuet', 'disableDuet'],
    ['allowStitch', 'disableStitch'],
  ] as const) {
    if (settings[setting] === false) fields[field] = 'on';
  }
  for (const name of [
    'brandContentToggle',
    'brandOrganicToggle',
    'isAiGenerated',
    'sensitive',
    'shareToFeed',
    'disableReshare',
  ])
    if (settings[name] === true) fields[name] = 'on';
  // Each image's tags in its own field, as the form writes them.
  const percent = (share: number) => String(Math.round(share * 10_000) / 100);
  for (const tag of (Array.isArray(settings.userTags) ? settings.userTags : []) as UserTag[]) {
    const field = `${USER_TAGS_PREFIX}${tag.mediaId}`;
    const written = `@${tag.username} ${percent(tag.x)} ${percent(tag.y)}`;
    fields[field] = fields[field] ? `${fields[field]}, ${written}` : written;
  }
  if (typeof settings.boardId === 'string')
    fields.board =
      typeof settings.boardSectionId === 'string' ? `${settings.boardId}/${settings.boardSectionId}` : settings.boardId;
  if (typeof settings.coverImageKeyFrameTime === 'number') fields.coverFrame = String(settings.coverImageKeyFrameTime);
  if (typeof settings.failingPart === 'number') fields.failingPart = String(settings.failingPart);
  return fields;
}

const FIELD_LABELS: Record<string, string> = {
  channels: 'Channels',
  content: 'Text',
  media: 'Media',
  alt: 'Alternative text',
  thread: 'Thread',
  date: 'Time',
  repeat: 'Repeat',
  repeat_until: 'Ends after',
  form: 'The post',
  title: 'Title',
  description: 'YouTube description',
  privacyStatus: 'YouTube visibility',
  madeForKids: 'Made for kids',
  tags: 'YouTube tags',
  postMode: 'TikTok post mode',
  privacyLevel: 'Who can see it on TikTok',
  disableComment: 'TikTok comments',
  disableDuet: 'TikTok duets',
  disableStitch: 'TikTok stitches',
  brandContentToggle: 'Paid partnership',
  brandOrganicToggle: 'Own business',
  // Mastodon's and LinkedIn's: the summary names the channel before it.
  visibility: 'Visibility',
  spoilerText: 'Content warning',
  sensitive: 'Sensitive media',
  language: 'Mastodon language',
  replySettings: 'Who can reply on X',
  languages: 'Bluesky languages',
  linkCard: 'Link card',
  firstComment: 'First comment',
  link: 'Link',
  postType: 'Instagram post type',
  shareToFeed: 'Share the reel to the feed',
  collaborators: 'Instagram collaborators',
  userTags: 'Instagram user tags',
  replyControl: 'Who can reply on Threads',
  disableReshare: 'LinkedIn resharing',
  documentTitle: 'LinkedIn document title',
  board: 'Pinterest board',
  coverFrame: 'Video cover frame',
};

/** The id of a part's field on the page: `content`, `media`, `alt-<media id>` for the post's own part. */
export const partFieldId = (part: number, name: string): string => (part === 0 ? name : `thread-${part - 1}-${name}`);

export interface FieldErrors {
  /** By the id of the field, the messages to show next to it. */
  fields: Record<string, string>;
  /** By the id of the field, a line for the summary above the form, which names the field. */
  summary: Record<string, string>;
}

/**
 * Where a path within one post goes on the form, for the fields of a part (its text, its media, the
 * alternative text of one image) and the thread as a whole: the field's id and its name in the summary.
 */
function partField(rest: string): { id: string; label: string } | undefined {
  const thread = /^thread\[(\d+)\]\.?(.*)$/.exec(rest);
  const part = thread ? Number(thread[1]) + 1 : 0;
  const within = thread ? thread[2]! : rest;
  const named = (id: string, label: string) => ({
    id: partFieldId(part, id),
    label: part === 0 ? label : `Part ${part + 1}: ${label}`,
  });
  if (thread && within === '') return { id: `thread-${part - 1}`, label: `Part ${part + 1}` };
  if (!thread && (rest === 'thread' || rest.startsWith('thread.')))
    return { id: 'thread', label: FIELD_LABELS.thread! };
  if (within.startsWith('content')) return named('content', FIELD_LABELS.content!);
  if (within.startsWith('mediaIds')) return named('media', FIELD_LABELS.media!);
  const alt = /^altTexts\.(.+)$/.exec(within);
  if (alt) return named(`alt-${alt[1]}`, FIELD_LABELS.alt!);
  if (within.startsWith('altTexts')) return named('media', FIELD_LABELS.alt!);
  return undefined;
}

/**
 * Puts each of the API's `details` next to the field it concerns: `posts[1].settings.title` is the
 * title field of the second channel's settings, `date` the time, `posts[0].mediaIds[2]` the media,
 * `posts[0].thread[1].content` the text of the thread's third part, `posts[0].altTexts.med_…` the
 * alternative text of that image. In the edit form the paths have no `posts[i]`: they concern the
 * one channel edited.
 */
export function placeErrors(
  details: ErrorDetail[],
  postChannels: string[],
  channelNames: Map<string, string>,
  message?: string,
  /** The image each user tag was typed for, by channel (see `userTagImages`). */
  tagImages: Map<string, string[]> = new Map(),
): FieldErrors {
  const errors: FieldErrors = { fields: {}, summary: {} };
  const add = (id: string, label: string, text: string) => {
    errors.fields[id] = errors.fields[id] ? `${errors.fields[id]} ${text}` : text;
    errors.summary[id] = errors.summary[id] ? `${errors.summary[id]} ${text}` : `${label}: ${text}`;
  };
  for (const detail of details) {
    const item = /^posts\[(\d+)\]\.?(.*)$/.exec(detail.path);
    const channelId = item ? postChannels[Number(item[1])] : postChannels.length === 1 ? postChannels[0] : undefined;
    const rest = item ? item[2]! : detail.path;
    const name = channelId ? (channelNames.get(channelId) ?? channelId) : undefined;
    const forChannel = (text: string) => (name && postChannels.length > 1 ? `${name}: ${text}` : text);
    const part = partField(rest);
    if (rest === '' || rest === 'channelId' || rest === 'posts' || rest === 'channelIds')
      add('channels', FIELD_LABELS.channels!, name ? `${name}: ${detail.message}` : detail.message);
    else if (part) add(part.id, part.label, forChannel(detail.message));
    else if (rest === 'firstComment' || rest.startsWith('firstComment.'))
      add('firstComment', FIELD_LABELS.firstComment!, forChannel(detail.message));
    else if (rest.startsWith('settings') && channelId) {
      const setting = rest.slice('settings'.length).replace(/^\./, '').split(/[.[]/)[0] ?? '';
      // A user tag's problem goes next to the field of the image it was typed for.
      const tagged = /^settings\.userTags\[(\d+)\]/.exec(rest);
      const image = tagged ? tagImages.get(channelId)?.[Number(tagged[1])] : undefined;
      const field = image
        ? `userTags-${image}`
        : ({
            disableComment: 'allowComment',
            disableDuet: 'allowDuet',
            disableStitch: 'allowStitch',
            boardId: 'board',
            boardSectionId: 'board',
            coverImageKeyFrameTime: 'coverFrame',
          }[setting] ?? setting);
      add(
        field ? `settings-${channelId}-${field}` : `settings-${channelId}`,
        `${name}: ${FIELD_LABELS[setting] ?? 'Settings'}`,
        detail.message,
      );
    } else if (rest === 'date' || rest === 'scheduledAt' || rest === 'status' || rest === 'startsAt')
      add('date', FIELD_LABELS.date!, detail.message);
    // A series' rule and end, from the Repeat fields.
    else if (rest === 'rule') add('repeat', FIELD_LABELS.repeat!, detail.message);
    else if (rest === 'endsAt') add('repeat_until', FIELD_LABELS.repeat_until!, detail.message);
    else add('form', FIELD_LABELS.form!, detail.message);
  }
  if (details.length === 0 && message) add('form', FIELD_LABELS.form!, message);
  return errors;
}
