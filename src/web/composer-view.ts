import type { Request, Response } from 'express';
import { listChannels } from '../channels/channels.js';
import type { Channel } from '../channels/tables.js';
import { DomainError } from '../core/errors.js';
import { mediaPage } from '../media/library.js';
import type { MediaContext } from '../media/storage.js';
import { renderPage } from '../pages/render.js';
import type { BrowserCookies } from '../pages/visitor.js';
import type { PostRow } from '../posts/post-body.js';
import type { PostsContext } from '../posts/context.js';
import type { CreatorInfo, PinterestBoard } from '../providers/provider-adapter.js';
import { partFieldId, partPrefix, publishedParts, type ComposerValues, type FieldErrors } from './composer-form.js';
import { commentCounters, countText, textCounters, UNIT_WORDS, type TextCounter } from './composer-counts.js';
import { previewChannels } from './composer-preview.js';
import { noRepeat, REPEAT_CHOICES } from './composer-repeat.js';
import { describeMedia, mediaOrigins } from './media-pages.js';
import { signedIn } from './signed-in.js';
import { readTimeZone } from './time-zone.js';

/** What the composer is for: a new post (with the key that makes its create idempotent), or an edit. */
export type ComposerMode = { kind: 'create'; idempotencyKey: string } | { kind: 'edit'; post: PostRow };

/** A TikTok channel's creator info, or why there is none. */
type TikTokCreator = { info?: CreatorInfo; problem?: string };
/** A Pinterest channel's boards to choose from, or why they cannot be read. */
type PinterestBoards = { boards?: PinterestBoard[]; problem?: string };

const LIBRARY_SIZE = 60;
/** The boards of a Pinterest channel the composer offers: as many as one page of the API lists. */
const BOARDS_SHOWN = 50;

const PRIVACY_WORDS: Record<string, string> = {
  PUBLIC_TO_EVERYONE: 'Everyone',
  MUTUAL_FOLLOW_FRIENDS: 'Friends (followers you follow back)',
  FOLLOWER_OF_CREATOR: 'Followers',
  SELF_ONLY: 'Only me',
};

/** Shows the composer's form: the channels it may post to, the media library, and what was typed. */
export class ComposerView {
  constructor(
    private readonly ctx: PostsContext & MediaContext,
    private readonly cookies: BrowserCookies,
  ) {}

  async show(
    req: Request,
    res: Response,
    mode: ComposerMode,
    values: ComposerValues,
    errors?: FieldErrors,
    status = 200,
    /** The id of the field the page starts at (`autofocus`): a part just added, or where one was removed. */
    focus?: string,
  ): Promise<void> {
    const { ctx } = this;
    const { organization } = signedIn(res);
    const timeZone = readTimeZone(req, res, this.cookies);
    const all = await listChannels(ctx.db, organization.id);
    const channels = mode.kind === 'edit' ? all.filter((channel) => channel.id === mode.post.channel_id) : all;
    const [library, tiktok, boards, counters] = await Promise.all([
      mediaPage(ctx, organization.id, { limit: LIBRARY_SIZE, cursor: undefined }),
      Promise.all(channels.map((channel) => this.tiktokCreator(channel))),
      Promise.all(channels.map((channel) => this.pinterestBoards(channel))),
      textCounters(ctx.providers, channels),
    ]);
    // Media chosen on the page stays offered even when it is older than the newest ones listed.
    const listed = new Set(library.data.map((media) => media.id));
    const origins = await mediaOrigins(ctx, library.data);
    const published = mode.kind === 'edit' ? publishedParts(mode.post) : [];
    const comment = mode.kind === 'edit' ? mode.post.first_comment : null;
    const describeCount = (counter: TextCounter, text: string) => ({
      key: counter.key,
      label: counter.label,
      channels: counter.channels.join(' '),
      max: counter.limit.max,
      unit: counter.limit.unit,
      unitWords: UNIT_WORDS[counter.limit.unit],
      count: countText(counter.limit, text),
    });
    const commentCounts = commentCounters(ctx.providers, channels);
    renderPage(
      res,
      '/web/templates/composer',
      {
        title: mode.kind === 'edit' ? 'Edit the post' : 'New post',
        path: mode.kind === 'edit' ? '/posts' : '/compose',
        scripts: ['upload.js', 'composer.js', 'composer-preview.js'],
        timeZone,
        action: mode.kind === 'edit' ? `/posts/${mode.post.id}/edit` : '/compose',
        mode: mode.kind,
        post: mode.kind === 'edit' ? { id: mode.post.id, status: mode.post.status } : undefined,
        idempotencyKey: mode.kind === 'create' ? mode.idempotencyKey : undefined,
        channels: channels.map((channel, i) => this.describeChannel(channel, values, tiktok[i], boards[i])),
        parts: values.parts.map((part, index) => ({
          ...part,
          index,
          prefix: partPrefix(index),
          id: (name: string) => partFieldId(index, name),
          published: index < published.length,
          releaseUrl: published[index]?.releaseUrl ?? null,
          counts: counters.map((counter) => describeCount(counter, part.content)),
          missingMedia: part.media.filter((id) => !listed.has(id)),
        })),
        // The networks of the channels offered that take an image's alternative text: the page offers
        // the field while one of them is chosen.
        altTextNetworks: [
          ...new Set(
            channels
              .filter((channel) => ctx.providers[channel.provider].altTextMax !== undefined)
              .map((channel) => channel.provider),
          ),
        ],
        // The first comment, offered while a channel whose network takes comments is chosen; once
        // published it is shown as it went out, without a field.
        firstComment: {
          networks: commentCounts.map((counter) => counter.key),
          content: values.firstComment,
          published: comment !== null && comment.releaseId !== null,
          releaseUrl: comment?.releaseUrl ?? null,
          counts: commentCounts.map((counter) => describeCount(counter, values.firstComment)),
        },
        preview: previewChannels(ctx.providers, channels, counters),
        media: library.data.map(describeMedia),
        accept: ctx.config.media.allowedTypes.join(','),
        privacyWords: PRIVACY_WORDS,
        repeatChoices: REPEAT_CHOICES,
        repeat: values.repeat ?? noRepeat(),
        values,
        focus,
        fieldErrors: errors?.fields ?? {},
        errors: errors?.summary ?? {},
      },
      status,
      { mediaOrigins: origins, connectOrigins: origins },
    );
  }

  /** A TikTok channel's creator info, read when the composer is shown (TikTok asks for it before every post). */
  private async tiktokCreator(channel: Channel): Promise<TikTokCreator | undefined> {
    if (channel.provider !== 'tiktok' || channel.status !== 'active') return undefined;
    const source = this.ctx.providers.tiktok.creatorInfo;
    if (!source)
      return {
        problem:
          'TikTok publishing is not configured on this server, so TikTok posts cannot be made; ask its operator.',
      };
    try {
      return { info: await source.creatorInfo(channel) };
    } catch (error) {
      if (error instanceof DomainError && error.status !== 500) return { problem: error.message };
      throw error;
    }
  }

  /**
   * A Pinterest channel's boards and their sections, read when the composer is shown, to choose the pin's
   * board from: the first page of them, as many as the API lists at once.
   */
  private async pinterestBoards(channel: Channel): Promise<PinterestBoards | undefined> {
    if (channel.provider !== 'pinterest' || channel.status !== 'active') return undefined;
    const source = this.ctx.providers.pinterest.boards;
    if (!source)
      return {
        problem: 'Pinterest publishing is not configured on this server, so pins cannot be made; ask its operator.',
      };
    try {
      return { boards: (await source.boards(channel, { limit: BOARDS_SHOWN, bookmark: undefined })).boards };
    } catch (error) {
      if (error instanceof DomainError && error.status !== 500) return { problem: error.message };
      throw error;
    }
  }

  private describeChannel(
    channel: Channel,
    values: ComposerValues,
    tiktok: TikTokCreator | undefined,
    pinterest: PinterestBoards | undefined,
  ) {
    const network = this.ctx.providers[channel.provider];
    const reason =
      channel.status === 'needs_reconnect'
        ? 'Needs reconnecting in Settings → Channels.'
        : channel.status === 'disabled'
          ? 'Disabled in Settings → Channels.'
          : (tiktok?.problem ?? pinterest?.problem)
            ? (tiktok?.problem ?? pinterest?.problem)
            : tiktok?.info && !tiktok.info.canPost
              ? `TikTok does not let this account post now: ${tiktok.info.cannotPostReason ?? 'TikTok gave no reason'}.`
              : // Its posts would fail at their time: the operator has not configured the network's app.
                !network.publishing
                ? `${network.name} publishing is not configured on this server, so its posts cannot be made; ` +
                  'ask its operator.'
                : undefined;
    return {
      id: channel.id,
      name: channel.name,
      provider: channel.provider,
      network: network.name,
      available: reason === undefined,
      reason,
      checked: values.channels.includes(channel.id),
      creator: tiktok?.info,
      boards: pinterest?.boards,
      fields: values.settings[channel.id] ?? {},
    };
  }
}
