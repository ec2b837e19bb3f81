import { acceptsPosts } from '../channels/channels.js';
import type { Channel } from '../channels/tables.js';
import type { ErrorDetail } from '../core/errors.js';
import type { Db } from '../db/database.js';
import type { Media } from '../media/tables.js';
import { graphemeCount } from '../providers/text-rules.js';
import type {
  CreatorInfo,
  ItemFacts,
  ItemPaths,
  MediaFacts,
  ProviderAdapter,
  Providers,
  SettingsOf,
} from '../providers/provider-adapter.js';
import type { ProviderSettings, StoredProviderSettings } from './post-body.js';

/** A part of a thread after the first, as the request has it. */
export interface ThreadPartDraft {
  content: string;
  mediaIds: string[];
  altTexts: Record<string, string>;
}

/** One post as a request describes it, before any rule is checked. */
export interface PostDraft {
  channelId: string;
  content: string;
  mediaIds: string[];
  altTexts: Record<string, string>;
  /** The parts after the first; `[]` for a single post. */
  thread: ThreadPartDraft[];
  /** The comment to publish on the post right after it; `null` for none. */
  firstComment: { content: string } | null;
  settings: ProviderSettings | undefined;
  paths: ItemPaths;
}

/** A post that passed every rule, ready to store. */
export interface CheckedPost {
  channel: Channel;
  paths: ItemPaths;
  content: string;
  mediaIds: string[];
  altTexts: Record<string, string>;
  thread: ThreadPartDraft[];
  firstComment: { content: string } | null;
  /** With the defaults filled in, also when none were sent (allowed where the network needs none). */
  settings: StoredProviderSettings;
}

export interface CheckDependencies {
  db: Db;
  providers: Providers;
  /**
   * Media that is not in the library, by an id of its own: what an import's dry run would download from
   * a URL, judged as the media it would become.
   */
  unstoredMedia?: MediaOfPost[];
}

function loadChannels(db: Db, organizationId: string, ids: string[]): Promise<Channel[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('channels')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', 'in', ids)
    .where('status', '<>', 'removed')
    .execute();
}

export type MediaOfPost = Pick<Media, 'id'> & MediaFacts;

function loadMedia(db: Db, organizationId: string, ids: string[]): Promise<MediaOfPost[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('media')
    .select(['id', 'kind', 'content_type', 'size', 'duration_ms', 'width', 'height', 'page_count'])
    .where('organization_id', '=', organizationId)
    .where('id', 'in', ids)
    .execute();
}

/**
 * Checks the drafts against the rules the contract cannot express: the channel and media belong to
 * the organization, the channel is enabled, there is something to post, the settings fit the
 * channel's provider and the provider's limits, and a TikTok account allows the choices. Every
 * problem of every draft is reported, so a client fixes a request in one round trip. TikTok creator
 * info that cannot be read is a `ProviderError` (502), thrown as is.
 */
export async function checkDrafts(
  deps: CheckDependencies,
  organizationId: string,
  drafts: PostDraft[],
): Promise<{ posts: CheckedPost[]; problems: ErrorDetail[] }> {
  const unique = (values: string[]) => [...new Set(values)];
  const [channels, media] = await Promise.all([
    loadChannels(deps.db, organizationId, unique(drafts.map((d) => d.channelId))),
    loadMedia(
      deps.db,
      organizationId,
      unique(drafts.flatMap((d) => [...d.mediaIds, ...d.thread.flatMap((p) => p.mediaIds)])),
    ),
  ]);
  const channelsById = new Map(channels.map((c) => [c.id, c]));
  const mediaById = new Map([...media, ...(deps.unstoredMedia ?? [])].map((m) => [m.id, m]));
  // One creator-info read per channel per request, however many items target it.
  const creatorInfo = new Map<string, Promise<CreatorInfo>>();
  const readCreatorInfo = (source: NonNullable<ProviderAdapter['creatorInfo']>) => (channel: Channel) => {
    let info = creatorInfo.get(channel.id);
    if (!info) {
      info = source.creatorInfo(channel);
      creatorInfo.set(channel.id, info);
    }
    return info;
  };

  const posts: CheckedPost[] = [];
  const problems: ErrorDetail[] = [];
  for (const draft of drafts) {
    const channel = channelsById.get(draft.channelId);
    const itemProblems = draftProblems(draft, channel, mediaById);
    const network = channel ? (deps.providers[channel.provider] as ProviderAdapter) : undefined;
    if (channel && network) {
      const facts: ItemFacts = {
        channelId: channel.id,
        content: draft.content,
        media: judgedMedia(network, draft.mediaIds, mediaById),
        paths: draft.paths,
        hasFirstComment: draft.firstComment !== null,
        hasAltTexts: Object.keys(draft.altTexts).length > 0,
      };
      const source = network.creatorInfo;
      itemProblems.push(
        ...(await settingsProblems(network, facts, channel, draft, source && readCreatorInfo(source))),
        ...altTextProblems(
          network,
          draft,
          { mediaIds: draft.paths.mediaIds, altTexts: draft.paths.altTexts },
          mediaById,
        ),
        ...threadProblems(network, draft, channel, mediaById),
        ...firstCommentProblems(network, draft, channel),
        ...documentProblems(network, draft, channel, mediaById),
      );
    }
    problems.push(...itemProblems);
    if (channel && network && itemProblems.length === 0) posts.push(checkedPost(draft, channel, network));
  }
  return { posts, problems };
}

/** A draft's problems with what it names: its channel (the organization's, taking posts), its media, its content. */
function draftProblems(draft: PostDraft, channel: Channel | undefined, mediaById: Map<string, unknown>): ErrorDetail[] {
  const { paths } = draft;
  const problems: ErrorDetail[] = [];
  if (!channel) {
    problems.push({
      path: paths.channel,
      message: `There is no channel ${draft.channelId} in this organization.`,
    });
  } else if (!acceptsPosts(channel)) {
    problems.push({
      path: paths.channel,
      message:
        channel.status === 'needs_reconnect'
          ? `Channel ${channel.id} needs to be connected again (the network refused its credentials) ` +
            'and accepts no new posts until a user does so in the web app.'
          : `Channel ${channel.id} is disabled and accepts no new posts until a user enables it in the web app.`,
    });
  }
  draft.mediaIds.forEach((id, index) => {
    if (!mediaById.has(id))
      problems.push({
        path: `${paths.mediaIds}[${index}]`,
        message: `There is no media ${id} in this organization.`,
      });
  });
  if (draft.content.trim() === '' && draft.mediaIds.length === 0) {
    problems.push({
      path: paths.content,
      message: `A post needs content or media (channel ${draft.channelId}).`,
    });
  }
  return problems;
}

/**
 * A thread's problems: a network without replies takes none; one with them takes so many parts, each
 * with content or media the organization has, within the network's rules for a post.
 */
function threadProblems(
  network: ProviderAdapter,
  draft: PostDraft,
  channel: Channel,
  mediaById: Map<string, MediaOfPost>,
): ErrorDetail[] {
  const { thread } = draft;
  const path = draft.paths.thread;
  if (thread.length === 0 || path === undefined) return [];
  const rules = network.thread;
  if (!rules) {
    return [
      {
        path,
        message:
          `A ${network.name} post cannot have a thread: ` +
          `${network.name} has no replies to a post (channel ${channel.id}).`,
      },
    ];
  }
  const problems: ErrorDetail[] = [];
  if (thread.length + 1 > rules.maxParts) {
    problems.push({
      path,
      message:
        `A ${network.name} thread has at most ${rules.maxParts} parts, the post's own included; ` +
        `this one has ${thread.length + 1} (channel ${channel.id}).`,
    });
  }
  thread.forEach((part, index) => {
    const paths = {
      content: `${path}[${index}].content`,
      mediaIds: `${path}[${index}].mediaIds`,
      altTexts: `${path}[${index}].altTexts`,
    };
    problems.push(...altTextProblems(network, part, paths, mediaById));
    part.mediaIds.forEach((id, i) => {
      if (!mediaById.has(id))
        problems.push({ path: `${paths.mediaIds}[${i}]`, message: `There is no media ${id} in this organization.` });
    });
    if (part.content.trim() === '' && part.mediaIds.length === 0) {
      problems.push({
        path: paths.content,
        message: `Part ${index + 2} of the thread needs content or media (channel ${channel.id}).`,
      });
    }
    const media = judgedMedia(network, part.mediaIds, mediaById);
    problems.push(
      ...rules.partProblems({
        channelId: channel.id,
        content: part.content,
        media,
        paths: { ...draft.paths, ...paths, thread: path },
      }),
    );
  });
  return problems;
}

/**
 * Documents on a network that publishes none, each named by its place: in the post's media or in a part
 * of its thread (documents are posts of their own on LinkedIn, never a part of a thread).
 */
function documentProblems(
  network: ProviderAdapter,
  draft: PostDraft,
  channel: Channel,
  mediaById: Map<string, MediaOfPost>,
): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  const refuse = (ids: string[], path: string, message: string) =>
    ids.forEach((id, index) => {
      if (mediaById.get(id)?.kind === 'document') problems.push({ path: `${path}[${index}]`, message });
    });
  if (!network.takesDocuments)
    refuse(
      draft.mediaIds,
      draft.paths.mediaIds,
      `${network.name} takes no documents (PDF): only LinkedIn publishes them (channel ${channel.id}).`,
    );
  const thread = draft.paths.thread;
  if (thread !== undefined)
    draft.thread.forEach((part, index) =>
      refuse(
        part.mediaIds,
        `${thread}[${index}].mediaIds`,
        `A document (PDF) is a post of its own, not a part of a thread (channel ${channel.id}).`,
      ),
    );
  return problems;
}

/**
 * The media of a post or part for the network's own rules, in order; `undefined` (nothing to judge, as the
 * rules take it) when a media id is unknown or a document is on a network that takes none: both are
 * reported already, and the rules would only add a misleading word about the rest.
 */
function judgedMedia(
  network: ProviderAdapter,
  ids: string[],
  mediaById: Map<string, MediaOfPost>,
): MediaOfPost[] | undefined {
  const media = ids.map((id) => mediaById.get(id));
  if (media.some((one) => one === undefined || (one.kind === 'document' && !network.takesDocuments))) return undefined;
  return media as MediaOfPost[];
}

/** A first comment, on a network with comments, within its length. */
function firstCommentProblems(network: ProviderAdapter, draft: PostDraft, channel: Channel): ErrorDetail[] {
  const path = draft.paths.firstComment;
  if (!draft.firstComment || path === undefined) return [];
  if (!network.firstComment)
    return [
      {
        path,
        message:
          `${network.name} posts cannot have a first comment (channel ${channel.id})` +
          (network.thread ? ': send a thread, whose parts are published as replies.' : '.'),
      },
    ];
  const { maxLength } = network.firstComment;
  const length = draft.firstComment.content.length;
  if (length <= maxLength) return [];
  return [
    {
      path: `${path}.content`,
      message: `${network.name} takes a comment of ${maxLength} characters (channel ${channel.id}); it has ${length}.`,
    },
  ];
}

/**
 * Alternative texts name media of the post or part they are in, on a network that takes them, within
 * its length.
 */
function altTextProblems(
  network: ProviderAdapter,
  item: { mediaIds: string[]; altTexts: Record<string, string> },
  paths: { mediaIds: string; altTexts: string },
  mediaById: Map<string, Pick<Media, 'kind'>>,
): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  for (const [mediaId, text] of Object.entries(item.altTexts)) {
    const videoMax = mediaById.get(mediaId)?.kind === 'video' ? network.videoAltTextMax : undefined;
    const path = `${paths.altTexts}.${mediaId}`;
    if (network.altTextMax === undefined) {
      problems.push({ path, message: `${network.name} takes no alternative text for media.` });
    } else if (!item.mediaIds.includes(mediaId)) {
      problems.push({ path, message: `${mediaId} is not among the media of ${paths.mediaIds}.` });
    } else if (mediaById.get(mediaId)?.kind === 'document') {
      problems.push({
        path,
        message: `A document (PDF) has no alternative text on ${network.name}: its pages are shown.`,
      });
    } else if (text.length > network.altTextMax) {
      problems.push({
        path,
        message: `${network.name} takes ${network.altTextMax} characters of alternative text; this has ${text.length}.`,
      });
    } else if (videoMax !== undefined && graphemeCount(text) > videoMax) {
      const length = graphemeCount(text);
      problems.push({
        path,
        message: `${network.name} takes ${videoMax} characters of a video's alternative text; this has ${length}.`,
      });
    }
  }
  return problems;
}

function checkedPost(draft: PostDraft, channel: Channel, network: ProviderAdapter): CheckedPost {
  return {
    channel,
    paths: draft.paths,
    content: draft.content,
    mediaIds: draft.mediaIds,
    altTexts: draft.altTexts,
    thread: draft.thread,
    firstComment: draft.firstComment,
    // A network that needs no settings gets its defaults either way, so both create forms store the same.
    settings: network.withDefaults(
      (draft.settings ?? { __type: channel.provider }) as SettingsOf<typeof channel.provider>,
    ),
  };
}

/** The settings' problems: missing or of another network, else what the channel's network says of them. */
async function settingsProblems(
  network: ProviderAdapter,
  item: ItemFacts,
  channel: Channel,
  draft: Pick<PostDraft, 'settings' | 'mediaIds' | 'thread'>,
  creatorInfo: ((channel: Channel) => Promise<CreatorInfo>) | undefined,
): Promise<ErrorDetail[]> {
  const { settings } = draft;
  const settingsPath = item.paths.settings;
  const mediaIds = [...draft.mediaIds, ...draft.thread.flatMap((part) => part.mediaIds)];
  if (!settings && !network.needsSettings) {
    // The network's rules for the post hold with its default settings too.
    return network.settingsProblems({
      item,
      channel,
      settings: { __type: channel.provider } as SettingsOf<typeof channel.provider>,
      path: settingsPath ?? 'settings',
      mediaIds,
      creatorInfo,
    });
  }
  if (!settings) {
    return [
      settingsPath === undefined
        ? {
            path: item.paths.channel,
            message:
              `Channel ${channel.id} is a ${network.name} channel, which needs settings: ` +
              `use the per-channel form (posts) and send settings with __type "${channel.provider}".`,
          }
        : {
            path: settingsPath,
            message: `A ${network.name} post needs settings with __type "${channel.provider}" (channel ${channel.id}).`,
          },
    ];
  }
  // settings are only ever sent in the per-channel form and on edits, which both have a path for them.
  const path = settingsPath ?? 'settings';
  if (settings.__type !== channel.provider) {
    return [
      {
        path: `${path}.__type`,
        message:
          `Channel ${channel.id} is a ${network.name} channel; ` +
          `its settings need __type "${channel.provider}", not "${settings.__type}".`,
      },
    ];
  }
  return network.settingsProblems({
    item,
    channel,
    settings,
    path,
    mediaIds,
    creatorInfo,
  });
}
