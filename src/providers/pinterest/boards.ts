import { markNeedsReconnect } from '../../channels/channels.js';
import type { Channel } from '../../channels/tables.js';
import type { Clock } from '../../core/clock.js';
import { DomainError, ProviderError, UnprocessableError } from '../../core/errors.js';
import type { Db } from '../../db/database.js';
import type { NetworkAnswer } from '../network-call.js';
import type { BoardsSource, PinterestBoard } from '../provider-adapter.js';
import { PublishError, ReconnectNeededError } from '../publishing-contract.js';
import { jsonOf, pinterestMessage, type PinterestApi } from './api.js';
import type { PinterestTokens } from './tokens.js';

/** A board's sections are read in pages of Pinterest's largest size, and at most this many pages. */
const SECTION_PAGE = 250;
const SECTION_PAGES = 4;

interface Page<T> {
  items?: T[];
  bookmark?: string | null;
}

/**
 * A Pinterest account's boards, each with its sections, read live (`GET /v5/boards`, by Pinterest's
 * bookmark, then `GET /v5/boards/{id}/sections` for each board of the page): what a pin's board and
 * section are chosen from. A token Pinterest refuses marks the channel `needs_reconnect` (422); Pinterest
 * failing or unreachable is 502.
 */
export class PinterestBoards implements BoardsSource {
  constructor(
    private readonly api: PinterestApi,
    private readonly tokens: PinterestTokens,
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  async boards(
    channel: Channel,
    page: { limit: number; bookmark: string | undefined },
  ): Promise<{ boards: PinterestBoard[]; next: string | null }> {
    try {
      const query = new URLSearchParams({ page_size: String(page.limit) });
      if (page.bookmark) query.set('bookmark', page.bookmark);
      const listed = await this.read<{ id: string; name: string; description?: string | null; privacy?: string }>(
        channel,
        `/v5/boards?${query.toString()}`,
      );
      const boards: PinterestBoard[] = [];
      for (const board of listed.items ?? []) {
        boards.push({
          id: board.id,
          name: board.name,
          description: board.description ?? null,
          privacy: board.privacy ?? 'PUBLIC',
          sections: await this.sections(channel, board.id),
        });
      }
      return { boards, next: listed.bookmark || null };
    } catch (error) {
      throw await this.failureOf(channel, error);
    }
  }

  private async sections(channel: Channel, boardId: string): Promise<PinterestBoard['sections']> {
    const sections: PinterestBoard['sections'] = [];
    let bookmark: string | null | undefined;
    for (let pages = 0; pages < SECTION_PAGES; pages += 1) {
      const query = new URLSearchParams({ page_size: String(SECTION_PAGE) });
      if (bookmark) query.set('bookmark', bookmark);
      const page = await this.read<{ id: string; name: string }>(
        channel,
        `/v5/boards/${encodeURIComponent(boardId)}/sections?${query.toString()}`,
      );
      sections.push(...(page.items ?? []).map(({ id, name }) => ({ id, name })));
      bookmark = page.bookmark;
      if (!bookmark) break;
    }
    return sections;
  }

  private async read<T>(channel: Channel, path: string): Promise<Page<T>> {
    const answer: NetworkAnswer = await this.tokens.authorized(channel, (authorization) =>
      this.api.send(path, { method: 'GET', authorization }),
    );
    if (answer.status === 403)
      throw new ReconnectNeededError(`the account did not grant this app what it needs (${pinterestMessage(answer)})`);
    const body = jsonOf<Page<T>>(answer);
    if (answer.status !== 200 || !body)
      throw new ProviderError(`Pinterest refused to list the account's boards (${pinterestMessage(answer)}).`);
    return body;
  }

  private async failureOf(channel: Channel, error: unknown): Promise<unknown> {
    if (error instanceof ReconnectNeededError) {
      await markNeedsReconnect(this.db, channel.id, this.clock.now());
      return new UnprocessableError(
        `Channel ${channel.id} needs to be connected again: Pinterest refused its credentials (${error.message}).`,
        undefined,
        { cause: error },
      );
    }
    // Pinterest unreachable (callNetwork's TransientPublishError).
    if (error instanceof PublishError) return new ProviderError(`${error.message}; try again in a moment.`);
    if (error instanceof DomainError) return error;
    // The access token could not be refreshed for now: Pinterest's token endpoint failed, or another
    // worker's refresh of it has not finished.
    if (error instanceof Error)
      return new ProviderError(
        `Pinterest's access token could not be refreshed (${error.message}); try again in a moment.`,
        undefined,
        { cause: error },
      );
    return error;
  }
}
