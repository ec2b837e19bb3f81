import type { Channel } from '../channels/tables.js';
import type { Db } from '../db/database.js';

/** One step of the first-run checklist: what to do, where, and whether the organization has done it. */
export interface FirstRunStep {
  id: 'connect' | 'schedule' | 'post';
  label: string;
  href: string;
  hint: string;
  /** `undefined` for a step the service cannot tell is done: shown as a suggestion, never holding the list open. */
  done: boolean | undefined;
}

/**
 * The calendar's first-run checklist, or `undefined` once every step is done. A channel is connected
 * when one of a real network is active (the sandbox every organization starts with only tries things
 * out); the schedule is set when any channel has a posting slot; the first post is any post of the
 * organization, in any state.
 */
export async function firstRunChecklist(
  db: Db,
  organizationId: string,
  channels: Channel[],
): Promise<FirstRunStep[] | undefined> {
  const connected = channels.some((channel) => channel.provider !== 'sandbox' && channel.status === 'active');
  const active = channels.filter((channel) => channel.status !== 'removed');
  const anySlot =
    active.length === 0
      ? undefined
      : await db
          .selectFrom('channel_slots')
          .select('channel_id')
          .where(
            'channel_id',
            'in',
            active.map((channel) => channel.id),
          )
          .limit(1)
          .executeTakeFirst();
  // The schedule of the channel to post to first: a real network's, else the sandbox's.
  const first = active.find((channel) => channel.provider !== 'sandbox') ?? active[0];
  const anyPost = await db
    .selectFrom('posts')
    .select('id')
    .where('organization_id', '=', organizationId)
    // In the order of posts_organization_schedule_idx, so the first row is read from the index: with
    // a bare limit the planner may read the table from its start, hoping an organization's row is near.
    .orderBy('scheduled_at')
    .limit(1)
    .executeTakeFirst();
  const steps: FirstRunStep[] = [
    {
      id: 'connect',
      label: 'Connect a channel',
      href: '/settings/channels',
      hint: 'A social account to publish to; the sandbox channel lets you try everything first.',
      done: connected,
    },
    {
      id: 'schedule',
      label: 'Set the posting schedule',
      href: first ? `/settings/channels/${encodeURIComponent(first.id)}/schedule` : '/settings/channels',
      hint: 'The times of the week each channel posts at: Add to queue takes the next free one.',
      done: anySlot !== undefined,
    },
    {
      id: 'post',
      label: 'Write your first post',
      href: '/compose',
      hint: 'Schedule it, publish it now or keep it as a draft.',
      done: anyPost !== undefined,
    },
  ];
  return steps.every((step) => step.done !== false) ? undefined : steps;
}
