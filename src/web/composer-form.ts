import type { Request } from 'express';
import type { components } from '../../generated/public-v1.js';
import type { Channel } from '../channels/tables.js';
import type { ErrorDetail } from '../core/errors.js';
import type { PostRow } from '../posts/post-body.js';

type ProviderSettings = components['schemas']['ProviderSettings'];

/** What the composer's form holds, as typed: the page shows it back as it was when something is refused. */
export interface ComposerValues {
  channels: string[];
  content: string;
  media: string[];
  date: string;
  time: string;
  /** Each channel's settings fields by name (`title`, `privacyLevel`, `allowComment`…), as the form sent them. */
  settings: Record<string, Record<string, string>>;
}

/** Every value of a repeatable form field (checkboxes). */
function fieldValues(req: Request, name: string): string[] {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

const text = (req: Request, name: string): string => fieldValues(req, name)[0] ?? '';

const SETTINGS_FIELD = /^settings\.([A-Za-z0-9_-]{1,100})\.([A-Za-z]{1,40})$/;

export function readComposerForm(req: Request): ComposerValues {
  const settings: Record<string, Record<string, string>> = {};
  for (const name of Object.keys((req.body as Record<string, unknown> | undefined) ?? {})) {
    const match = SETTINGS_FIELD.exec(name);
    if (!match) continue;
    (settings[match[1]!] ??= {})[match[2]!] = text(req, name);
  }
  return {
    channels: [...new Set(fieldValues(req, 'channel'))],
    content: text(req, 'content').replace(/\r\n/g, '\n'),
    media: [...new Set(fieldValues(req, 'media'))],
    date: text(req, 'date'),
    time: text(req, 'time'),
    settings,
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
    case 'youtube': {
      const tags = (fields.tags ?? '')
        .split(',')
        .map((tag) => tag.trim())
        .filter(Boolean);
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
    default:
      return undefined;
  }
}

/** A stored post's settings as the form's fields, for editing it. */
export function settingsFields(post: Pick<PostRow, 'settings'>): Record<string, string> {
  const settings = (post.settings ?? {}) as Record<string, unknown>;
  const fields: Record<string, string> = {};
  for (const name of ['title', 'description', 'privacyStatus', 'postMode', 'privacyLevel']) {
    if (typeof settings[name] === 'string') fields[name] = settings[name];
  }
  if (typeof settings.madeForKids === 'boolean') fields.madeForKids = settings.madeForKids ? 'yes' : 'no';
  if (Array.isArray(settings.tags)) fields.tags = settings.tags.join(', ');
  for (const [field, setting] of [
    ['allowComment', 'disableComment'],
    ['allowDuet', 'disableDuet'],
    ['allowStitch', 'disableStitch'],
  ] as const) {
    if (settings[setting] === false) fields[field] = 'on';
  }
  for (const name of ['brandContentToggle', 'brandOrganicToggle', 'isAiGenerated'])
    if (settings[name] === true) fields[name] = 'on';
  return fields;
}

const FIELD_LABELS: Record<string, string> = {
  channels: 'Channels',
  content: 'Text',
  media: 'Media',
  date: 'Time',
  form: 'The post',
  title: 'YouTube title',
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
};

export interface FieldErrors {
  /** By the id of the field, the messages to show next to it. */
  fields: Record<string, string>;
  /** By the id of the field, a line for the summary above the form, which names the field. */
  summary: Record<string, string>;
}

/**
 * Puts each of the API's `details` next to the field it concerns: `posts[1].settings.title` is the
 * title field of the second channel's settings, `date` the time, `posts[0].mediaIds[2]` the media.
 * In the edit form the paths have no `posts[i]`: they concern the one channel edited.
 */
export function placeErrors(
  details: ErrorDetail[],
  postChannels: string[],
  channelNames: Map<string, string>,
  message?: string,
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
    if (rest === '' || rest === 'channelId' || rest === 'posts' || rest === 'channelIds')
      add('channels', FIELD_LABELS.channels!, name ? `${name}: ${detail.message}` : detail.message);
    else if (rest.startsWith('content')) add('content', FIELD_LABELS.content!, forChannel(detail.message));
    else if (rest.startsWith('mediaIds')) add('media', FIELD_LABELS.media!, forChannel(detail.message));
    else if (rest.startsWith('settings') && channelId) {
      const setting = rest.slice('settings'.length).replace(/^\./, '').split(/[.[]/)[0] ?? '';
      const field =
        { disableComment: 'allowComment', disableDuet: 'allowDuet', disableStitch: 'allowStitch' }[setting] ?? setting;
      add(
        field ? `settings-${channelId}-${field}` : `settings-${channelId}`,
        `${name}: ${FIELD_LABELS[setting] ?? 'Settings'}`,
        detail.message,
      );
    } else if (rest === 'date' || rest === 'scheduledAt' || rest === 'status')
      add('date', FIELD_LABELS.date!, detail.message);
    else add('form', FIELD_LABELS.form!, detail.message);
  }
  if (details.length === 0 && message) add('form', FIELD_LABELS.form!, message);
  return errors;
}
