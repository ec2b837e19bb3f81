import express, { type Request, type Response, type Router } from 'express';
import { DomainError } from '../core/errors.js';
import { field } from '../pages/visitor.js';
import type { BrowserCookies } from '../pages/visitor.js';
import type { PostsContext } from '../posts/context.js';
import { movePost, removePost, schedulePostAt } from '../posts/lifecycle.js';
import { wallClockInstant } from './calendar-view.js';
import { confirmedOrAsk } from './confirm-first.js';
import { signedIn } from './signed-in.js';
import { readTimeZone } from './time-zone.js';

/** The most posts one bulk action takes: the Posts page shows 50 at a time. */
const MAX_POSTS = 100;

/** What happened to one post of a bulk action, for the Posts page to list. */
export interface BulkResult {
  postId: string;
  done: boolean;
  message: string;
}

type BulkAction = 'delete' | 'draft' | 'scheduled' | 'move';
const ACTIONS: Record<BulkAction, string> = {
  delete: 'deleted',
  draft: 'moved to drafts',
  scheduled: 'scheduled',
  move: 'moved',
};

/** The posts ticked on the Posts page: one field per post. */
function tickedPosts(req: Request): string[] {
  const value = (req.body as Record<string, unknown> | undefined)?.post;
  const ids = Array.isArray(value) ? value : [value];
  return [...new Set(ids.filter((id): id is string => typeof id === 'string' && id !== ''))].slice(0, MAX_POSTS);
}

/**
 * Posts → the ticked posts: delete them (after a confirmation), move them to drafts, schedule them, or
 * move them to one day and time. Each post is changed on its own, by the same domain code as one post's
 * page, so one post refused (a published post scheduled, a publishing one deleted) leaves the others
 * done; the Posts page then lists each post's result.
 */
export function bulkPostRoutes(
  ctx: PostsContext,
  cookies: BrowserCookies,
  showResults: (req: Request, res: Response, results: BulkResult[], status: number) => Promise<void>,
): Router {
  const router = express.Router();
  router.post('/posts/bulk', async (req, res) => {
    const { actor, visitor } = signedIn(res);
    const by = { user: visitor.user.id };
    const { zone } = readTimeZone(req, res, cookies);
    const action = field(req, 'action') as BulkAction;
    const posts = tickedPosts(req);
    if (!(action in ACTIONS) || posts.length === 0) {
      const message = posts.length === 0 ? 'Tick the posts to change first.' : 'Choose what to do with the posts.';
      return showResults(req, res, [{ postId: '', done: false, message }], 400);
    }
    const at = action === 'move' ? wallClockInstant(field(req, 'date'), field(req, 'time'), zone) : undefined;
    if (action === 'move' && !at) {
      return showResults(
        req,
        res,
        [{ postId: '', done: false, message: 'Choose a day and a time to move the posts to.' }],
        400,
      );
    }
    if (action === 'delete') {
      const confirmation = {
        question: posts.length === 1 ? 'Delete 1 post?' : `Delete ${posts.length} posts?`,
        consequence:
          'The posts and their history are deleted and will not be published. Posts already published stay on ' +
          'their networks: only our record of them goes. This cannot be undone.',
        button: posts.length === 1 ? 'Delete the post' : `Delete the ${posts.length} posts`,
        back: '/posts',
        path: '/posts',
        fields: [['action', 'delete'], ...posts.map((id) => ['post', id])] as [string, string][],
      };
      if (!confirmedOrAsk(req, res, confirmation)) return;
    }
    const results: BulkResult[] = [];
    for (const postId of posts) {
      try {
        if (action === 'delete') await removePost(ctx, actor, postId, by);
        else if (action === 'move') await schedulePostAt(ctx, actor, postId, at!);
        else await movePost(ctx, actor, postId, { status: action });
        results.push({ postId, done: true, message: ACTIONS[action] });
      } catch (error) {
        if (!(error instanceof DomainError) || error.status >= 500) throw error;
        results.push({ postId, done: false, message: error.message });
      }
    }
    await showResults(req, res, results, 200);
  });
  return router;
}
