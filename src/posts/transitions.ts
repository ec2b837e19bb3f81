import type { components } from '../../generated/public-v1.js';
import type { PostStatus } from '../core/contract.js';
import { ConflictError, UnprocessableError } from '../core/errors.js';

/**
 * The statuses a user may move a post to, from each status; the contract's `changePostStatus`
 * documents the same table. `publishing`, `published` and `failed` are reached through the
 * publisher only, and a post that is `publishing` or `published` belongs to the network. A move to
 * `scheduled` by a role that may not publish asks for approval instead (`pending_approval`, see
 * approval.ts); a pending post moved to `scheduled` by one that may is approved.
 */
export const USER_TRANSITIONS: Readonly<Record<PostStatus, readonly PostStatus[]>> = {
  draft: ['scheduled'],
  pending_approval: ['scheduled', 'draft'],
  scheduled: ['draft'],
  failed: ['scheduled', 'draft'],
  publishing: [],
  published: [],
  // An occurrence of a series that will not be published; the series never creates it again.
  skipped: [],
};

/** A post's content, media and settings may be edited until it is on its way to the network. */
export function isEditable(status: PostStatus): boolean {
  return USER_TRANSITIONS[status].length > 0;
}

/** Clocks disagree a little: a time this far in the past still counts as now. */
export const CLOCK_SKEW_MS = 60_000;

export function isTooFarInThePast(instant: Date, now: Date): boolean {
  return instant.getTime() < now.getTime() - CLOCK_SKEW_MS;
}

export function assertNotInThePast(instant: Date, now: Date, path: string): void {
  if (isTooFarInThePast(instant, now)) {
    throw new UnprocessableError(`${instant.toISOString()} is in the past; choose a time from now on.`, [
      { path, message: `is more than 1 minute in the past (it is ${now.toISOString()} now)` },
    ]);
  }
}

export function assertNotOnTheNetwork(status: PostStatus): void {
  if (status === 'publishing') throw new ConflictError('The post is publishing; it can no longer be changed.');
  if (status === 'published') {
    throw new ConflictError(
      'The post is published; it can no longer be changed (deleting it removes our record only).',
    );
  }
  if (status === 'skipped') {
    throw new ConflictError('The post is a skipped occurrence of its series; it can no longer be changed.');
  }
}

interface PostState {
  status: PostStatus;
  scheduledAt: Date | null;
}

/**
 * What a user asks for: a status (`PATCH /posts/{id}/status`), or a new time, which also means
 * `scheduled` (`POST /posts/{id}/schedule`).
 */
export type StatusRequest =
  | Pick<components['schemas']['ChangePostStatusRequest'], 'status'>
  | { status: 'scheduled'; scheduledAt: Date; path: string };

/**
 * The one place that decides how a user may move a post: the state it moves to, `undefined` when
 * nothing changes, or a `409` (the publisher owns the post, or the table has no such move) or `422`
 * (the time to publish at is in the past).
 */
export function nextState(post: PostState, request: StatusRequest, now: Date): PostState | undefined {
  assertNotOnTheNetwork(post.status);
  const to = request.status;
  const moving = post.status !== to;
  if (moving && !USER_TRANSITIONS[post.status].includes(to)) {
    throw new ConflictError(`A ${post.status} post cannot be made ${to}.`);
  }

  if ('scheduledAt' in request) {
    // Scheduling at a given time: a move to `scheduled`, or a scheduled post getting a new time.
    assertNotInThePast(request.scheduledAt, now, request.path);
    return { status: 'scheduled', scheduledAt: request.scheduledAt };
  }
  if (!moving) return undefined;
  if (to === 'draft') return { status: 'draft', scheduledAt: post.scheduledAt };

  if (post.status === 'failed') {
    // A retry: publish at the planned time if it is still ahead, otherwise now.
    const at = post.scheduledAt && post.scheduledAt.getTime() > now.getTime() ? post.scheduledAt : now;
    return { status: 'scheduled', scheduledAt: at };
  }
  if (!post.scheduledAt || isTooFarInThePast(post.scheduledAt, now)) {
    if (post.status === 'pending_approval') throw approvalTooLate(post.scheduledAt, 'status');
    throw new UnprocessableError(
      post.scheduledAt
        ? `The post's scheduledAt (${post.scheduledAt.toISOString()}) is in the past; ` +
            'set a new time with POST /public/v1/posts/{id}/schedule.'
        : 'The post has no scheduledAt; set one with POST /public/v1/posts/{id}/schedule.',
      [
        {
          path: 'status',
          message: 'a draft is scheduled at its scheduledAt, which must be at most 1 minute in the past',
        },
      ],
    );
  }
  return { status: 'scheduled', scheduledAt: post.scheduledAt };
}

/**
 * `422` for approving a pending post at its `scheduledAt` when that has passed: the approver chooses
 * between now and a new time.
 */
export function approvalTooLate(scheduledAt: Date | null, path: string): UnprocessableError {
  const when = scheduledAt
    ? `The post's scheduledAt (${scheduledAt.toISOString()}) has passed`
    : 'The post has no scheduledAt';
  return new UnprocessableError(
    `${when}; approve it to be published now (when: now), or set a new time with POST /public/v1/posts/{id}/schedule.`,
    [{ path, message: 'the time to publish at is more than 1 minute in the past' }],
  );
}
