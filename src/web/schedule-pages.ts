import { CSV_KINDS } from '../lifecycle/export.js';
import express, { type Response, type Router } from 'express';
import { findChannel } from '../channels/channels.js';
import { readSlots, toSlotBody, WEEKDAYS, type ScheduleSlotBody } from '../channels/slots.js';
import { DomainError } from '../core/errors.js';
import { can } from '../core/roles.js';
import { formatTime } from '../pages/forms.js';
import { renderErrorPage, renderPage } from '../pages/render.js';
import { field } from '../pages/visitor.js';
import type { PostsContext } from '../posts/context.js';
import {
  changeOrganizationTimeZone,
  channelQueue,
  organizationTimeZone,
  replaceChannelSchedule,
} from '../posts/queue.js';
import { signedIn } from './signed-in.js';
import { currentZoneName, isTimeZone, timeZoneOptions, zoneOf } from './time-zone.js';

const DAY_NAMES = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const TIME = /^([01]?[0-9]|2[0-3]):([0-5][0-9])$/;
/** How many upcoming slots the schedule's page lists. */
const UPCOMING = 10;

/** The form's field of a weekday: its times, as people type them ("9:00, 17:30"). */
const fieldOf = (weekday: string) => `times-${weekday}`;

/** The slots a schedule form asks for, or the problem of each weekday's field. */
export function slotsOfForm(values: Record<string, string>): {
  slots: ScheduleSlotBody[];
  problems: Record<string, string>;
} {
  const slots: ScheduleSlotBody[] = [];
  const problems: Record<string, string> = {};
  WEEKDAYS.forEach((weekday, i) => {
    const typed = (values[weekday] ?? '')
      .split(/[\s,;]+/)
      .map((time) => time.trim())
      .filter((time) => time !== '');
    const wrong = typed.filter((time) => !TIME.test(time));
    if (wrong.length > 0) {
      problems[weekday] =
        `${DAY_NAMES[i]}: “${wrong.join('”, “')}” ${wrong.length === 1 ? 'is' : 'are'} no time of day; ` +
        'write times as 09:00 or 17:30, separated by commas.';
      return;
    }
    for (const time of typed) {
      const [, hours, minutes] = TIME.exec(time)!;
      slots.push({ weekday, time: `${hours!.padStart(2, '0')}:${minutes}` });
    }
  });
  return { slots, problems };
}

/**
 * Settings → Channels → a channel's Schedule (`/settings/channels/{id}/schedule`): its weekly posting
 * slots, which every member sees and admins change, with the next slots and the queued posts in
 * them; and Settings → Organization (`/settings/organization`): the organization's time zone.
 */
export function schedulePages(ctx: PostsContext): Router {
  const router = express.Router();

  const showSchedule = async (
    res: Response,
    channelId: string,
    form?: { values: Record<string, string>; problems: Record<string, string> },
    notice?: string,
    status = 200,
  ) => {
    const { organization, actor } = signedIn(res);
    const channel = await findChannel(ctx.db, organization.id, channelId);
    if (!channel) return renderErrorPage(res, 404, 'No such channel', 'There is no such channel in this organization.');
    const [zone, slots, queue] = await Promise.all([
      organizationTimeZone(ctx.db, organization.id),
      readSlots(ctx.db, channel.id),
      channelQueue(ctx, actor, channel.id, { limit: UPCOMING }),
    ]);
    const bodies = slots.map(toSlotBody);
    const reader = zoneOf(res);
    renderPage(
      res,
      '/web/templates/schedule',
      {
        title: `Schedule of ${channel.name}`,
        path: '/settings/channels',
        channel,
        zone,
        notice,
        problems: form ? Object.values(form.problems) : [],
        days: WEEKDAYS.map((weekday, i) => ({
          weekday,
          name: DAY_NAMES[i],
          field: fieldOf(weekday),
          value:
            form?.values[weekday] ??
            bodies
              .filter((slot) => slot.weekday === weekday)
              .map((slot) => slot.time)
              .join(', '),
          problem: form?.problems[weekday],
        })),
        upcoming: queue.data.map((slot) => ({
          at: formatTime(new Date(slot.at), reader),
          post: slot.post && { id: slot.post.id, content: slot.post.content || '(media only)' },
        })),
        readerZone: reader,
        mayChange: can(organization.role, 'channels:write'),
        mayExport: can(organization.role, 'organization:export'),
        owns: can(organization.role, 'organization:own'),
        csvKinds: CSV_KINDS,
      },
      status,
    );
  };

  router.get('/settings/channels/:id/schedule', async (req, res) => {
    const done =
      req.query.done === 'saved' ? 'The schedule was saved; queued posts moved where their slot went.' : undefined;
    await showSchedule(res, String(req.params.id), undefined, done);
  });

  router.post('/settings/channels/:id/schedule', async (req, res) => {
    const { actor } = signedIn(res);
    const channelId = String(req.params.id);
    const values = Object.fromEntries(WEEKDAYS.map((weekday) => [weekday, field(req, fieldOf(weekday))]));
    const { slots, problems } = slotsOfForm(values);
    if (Object.keys(problems).length > 0) return showSchedule(res, channelId, { values, problems }, undefined, 400);
    try {
      await replaceChannelSchedule(ctx, actor, channelId, slots);
    } catch (error) {
      if (!(error instanceof DomainError) || error.status >= 500) throw error;
      if (error.status === 404) return showSchedule(res, channelId, undefined, undefined, 404);
      return showSchedule(res, channelId, { values, problems: { monday: error.message } }, undefined, error.status);
    }
    res.redirect(303, `/settings/channels/${encodeURIComponent(channelId)}/schedule?done=saved`);
  });

  const showOrganization = async (res: Response, notice?: string, problem?: string, status = 200) => {
    const { organization } = signedIn(res);
    const zone = await organizationTimeZone(ctx.db, organization.id);
    renderPage(
      res,
      '/web/templates/organization',
      {
        title: 'Organization',
        path: '/settings/organization',
        zone,
        zones: timeZoneOptions(zone),
        notice,
        problem,
        mayChange: can(organization.role, 'channels:write'),
        mayExport: can(organization.role, 'organization:export'),
        owns: can(organization.role, 'organization:own'),
        csvKinds: CSV_KINDS,
      },
      status,
    );
  };

  router.get('/settings/organization', async (req, res) => {
    await showOrganization(res, req.query.done === 'saved' ? 'The time zone was saved.' : undefined);
  });

  router.post('/settings/organization', async (req, res) => {
    const { actor } = signedIn(res);
    const zone = field(req, 'timeZone');
    if (!isTimeZone(zone)) return showOrganization(res, undefined, 'Choose a time zone from the list.', 400);
    await changeOrganizationTimeZone(ctx, actor, currentZoneName(zone));
    res.redirect(303, '/settings/organization?done=saved');
  });

  return router;
}
