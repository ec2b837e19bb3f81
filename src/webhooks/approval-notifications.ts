import type { components } from '../../generated/public-v1.js';
import { can, ROLES } from '../core/roles.js';
import type { Notification } from '../mail/notifications.js';

type PostBody = components['schemas']['Post'];

/** The post events of approval, each told by mail to those who decide or to the post's author. */
export const APPROVAL_EVENTS: readonly string[] = ['pending_approval', 'approved', 'rejected'];

/** The roles that approve, who hear that a post waits for them. */
const APPROVERS = ROLES.filter((role) => can(role, 'posts:publish'));

const EXCERPT_LENGTH = 80;

function excerpt(content: string): string {
  const line = content.replace(/\s+/g, ' ').trim();
  if (line === '') return 'A post without text';
  return `“${line.length > EXCERPT_LENGTH ? `${line.slice(0, EXCERPT_LENGTH - 1)}…` : line}”`;
}

const at = (post: PostBody) =>
  post.scheduledAt ? `${post.scheduledAt.slice(0, 16).replace('T', ' ')} UTC` : 'no time yet';

/**
 * The mail of an approval event: a post waits (to the members who may approve it), or was approved or
 * rejected (to the member who submitted it, with the reviewer's comment).
 */
export function approvalNotification(
  event: { organization_id: string; type: string; details: unknown },
  post: PostBody,
): Notification | undefined {
  const path = `/posts/${post.id}`;
  const what = `${excerpt(post.content)} on ${post.provider}`;
  if (event.type === 'pending_approval')
    return {
      organizationId: event.organization_id,
      kind: 'post-awaits-approval',
      recipients: { roles: APPROVERS },
      data: {
        headline: 'A post awaits your approval',
        details: `${what}, to be published at ${at(post)}: approve or reject it on its page.`,
        path,
      },
    };
  if (event.type === 'approved')
    return {
      organizationId: event.organization_id,
      kind: 'post-reviewed',
      recipients: { submitterOfPost: post.id },
      data: {
        headline: 'Your post was approved',
        details: `${what} was approved: it is scheduled for ${at(post)}.`,
        path,
      },
    };
  if (event.type === 'rejected') {
    const comment = (event.details as { comment?: string } | null)?.comment ?? '';
    return {
      organizationId: event.organization_id,
      kind: 'post-reviewed',
      recipients: { submitterOfPost: post.id },
      data: {
        headline: 'Your post was rejected',
        details: `${what} was sent back to draft. The reviewer said: “${comment}” Change it and submit it again.`,
        path,
      },
    };
  }
  return undefined;
}
