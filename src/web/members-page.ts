import express, { type Response, type Router } from 'express';
import {
  changeMemberRole,
  listMembers,
  memberCredentials,
  removeMember,
  transferOwnership,
  type MemberActor,
} from '../accounts/members.js';
import { ValidationError } from '../core/errors.js';
import { can, isRole, ROLE_DESCRIPTIONS, ROLES, type Role } from '../core/roles.js';
import type { MailContext } from '../mail/worker.js';
import { keepMemberGrants, revokeMemberGrants } from '../oauth/grants.js';
import { createInvitation, invitationPath, listPendingInvitations, revokeInvitation } from '../accounts/invitations.js';
import { normalizeEmail } from '../accounts/organizations.js';
import { transaction } from '../db/transaction.js';
import { planMail } from '../mail/outbox.js';
import { formatTime } from '../pages/forms.js';
import { renderPage } from '../pages/render.js';
import { field } from '../pages/visitor.js';
import { zoneOf } from './time-zone.js';
import { signedIn } from './signed-in.js';

const GRANT_STEPS = { revoke: revokeMemberGrants, keep: keepMemberGrants };

function memberActor(res: Response): MemberActor {
  const { actor, visitor } = signedIn(res);
  return { ...actor, userId: visitor.user.id };
}

function roleField(value: string): Role {
  if (!isRole(value)) {
    throw new ValidationError('Choose one of the roles.', [{ path: 'role', message: 'unknown role' }]);
  }
  return value;
}

/**
 * Settings → Members: every member sees who belongs to the organization and may leave it; admins
 * change roles and remove members; owners make owners and hand the organization over.
 */
export function membersPage(ctx: MailContext): Router {
  const router = express.Router();

  const showMembers = async (res: Response, extra: object = {}, status = 200) => {
    const { organization, visitor } = signedIn(res);
    const zone = zoneOf(res);
    const members = await listMembers(ctx.db, organization.id);
    const manages = can(organization.role, 'members:manage');
    const owns = can(organization.role, 'organization:own');
    renderPage(
      res,
      '/web/templates/members',
      {
        title: 'Members',
        path: '/settings/members',
        manages,
        owns,
        // An admin hands out the roles up to admin; an owner, every role.
        roles: ROLES.filter((role) => owns || role !== 'owner').map((role) => ({
          role,
          description: ROLE_DESCRIPTIONS[role],
        })),
        members: members.map((member) => ({
          ...member,
          you: member.userId === visitor.user.id,
          joinedText: formatTime(member.joinedAt, zone),
          changeable: manages && (owns || member.role !== 'owner'),
        })),
        invitations: manages
          ? (await listPendingInvitations(ctx.db, organization.id, ctx.clock.now())).map((invitation) => ({
              ...invitation,
              expiresText: formatTime(invitation.expiresAt, zone),
            }))
          : [],
        ...extra,
      },
      status,
    );
  };

  router.get('/settings/members', (_req, res) => showMembers(res));

  router.post('/settings/members/invitations', async (req, res) => {
    const role = roleField(field(req, 'role'));
    if (role === 'owner')
      throw new ValidationError('Owners are made among members: invite as admin, then make them owner.');
    const email = field(req, 'email');
    const { visitor, organization } = signedIn(res);
    // The invitation and its mail in one transaction: both or neither. The link is also shown here once,
    // for an installation that sends no mail or an invitee who did not get it.
    const { token } = await transaction(ctx.db, async (trx) => {
      const invited = await createInvitation(trx, memberActor(res), { email, role }, ctx.clock.now());
      await planMail(ctx, trx, {
        kind: 'invitation',
        to: normalizeEmail(email),
        data: { token: invited.token, inviter: visitor.user.name, organizationName: organization.name },
      });
      return invited;
    });
    const link = `${ctx.config.publicUrl}${invitationPath(token)}`;
    await showMembers(res, { invitationLink: link, invitedEmail: normalizeEmail(email) }, 201);
  });

  router.post('/settings/members/invitations/:id/revoke', async (req, res) => {
    await revokeInvitation(ctx.db, memberActor(res), req.params.id, ctx.clock.now());
    res.redirect(303, '/settings/members');
  });

  router.post('/settings/members/transfer', async (req, res) => {
    await transferOwnership(ctx.db, memberActor(res), field(req, 'user_id'));
    res.redirect(303, '/settings/members');
  });

  router.post('/settings/members/:userId/role', async (req, res) => {
    await changeMemberRole(ctx.db, memberActor(res), req.params.userId, roleField(field(req, 'role')));
    res.redirect(303, '/settings/members');
  });

  // Removing a member (or leaving) first shows what they made that acts for the organization.
  router.get('/settings/members/:userId/remove', async (req, res) => {
    const { organization, visitor } = signedIn(res);
    const members = await listMembers(ctx.db, organization.id);
    const member = members.find((m) => m.userId === req.params.userId);
    if (!member) return res.redirect(303, '/settings/members');
    const leaving = member.userId === visitor.user.id;
    const credentials = await memberCredentials(ctx.db, organization.id, member.userId);
    renderPage(res, '/web/templates/member-remove', {
      title: leaving ? 'Leave the organization' : `Remove ${member.email}`,
      path: '/settings/members',
      member,
      leaving,
      credentials,
    });
  });

  router.post('/settings/members/:userId/remove', async (req, res) => {
    const actor = memberActor(res);
    await removeMember(ctx.db, actor, req.params.userId, {
      revokeCredentials: field(req, 'credentials') !== 'keep',
      grants: GRANT_STEPS,
      now: ctx.clock.now(),
    });
    res.redirect(303, req.params.userId === actor.userId ? '/calendar' : '/settings/members');
  });

  return router;
}
