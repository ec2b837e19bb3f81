import type { ContractRole } from './contract.js';
import { ForbiddenError } from './errors.js';

/**
 * Who may do what in an organization: the one table of it. The pages and the Public API both ask it
 * (the pages to refuse and to hide what a role cannot do, the API through each operation's
 * permission and the posts' own rules), so a role means the same wherever it acts.
 */

/** The roles of a member, from the most to the least trusted: the contract's, in this order. */
export const ROLES = ['owner', 'admin', 'editor', 'contributor', 'viewer'] as const satisfies readonly ContractRole[];
export type Role = (typeof ROLES)[number];
// tsc fails here when the contract gains a role that this table does not give permissions.
const EVERY_CONTRACT_ROLE: ContractRole extends Role ? true : never = true;
void EVERY_CONTRACT_ROLE;

export type Permission =
  | 'posts:read'
  /**
   * Create drafts and change drafts, and ask for them to be published: a post of a role without
   * `posts:publish` waits in `pending_approval` for one with it.
   */
  | 'posts:draft'
  /** Schedule, publish, move, edit scheduled posts, delete posts, and approve or reject pending ones. */
  | 'posts:publish'
  | 'media:read'
  | 'media:write'
  | 'channels:read'
  | 'channels:write'
  | 'analytics:read'
  | 'webhooks:read'
  | 'webhooks:write'
  /** API keys and the OAuth apps the organization registers, and the apps it approved. */
  | 'developers:manage'
  /** Invite, change the role of and remove members. */
  | 'members:manage'
  /** Download the organization's data (posts with history, channels, media list, members). */
  | 'organization:export'
  /** Read and export the organization's audit log (who changed members, keys, apps, webhooks, channels). */
  | 'audit:read'
  /** Hand the organization over to another member, and delete it. */
  | 'organization:own';

const READ: Permission[] = ['posts:read', 'media:read', 'channels:read', 'analytics:read'];
const CONTRIBUTE: Permission[] = [...READ, 'posts:draft', 'media:write'];
const EDIT: Permission[] = [...CONTRIBUTE, 'posts:publish'];
const ADMINISTER: Permission[] = [
  ...EDIT,
  'channels:write',
  'webhooks:read',
  'webhooks:write',
  'developers:manage',
  'members:manage',
  'organization:export',
  'audit:read',
];

export const PERMISSIONS: Readonly<Record<Role, ReadonlySet<Permission>>> = {
  owner: new Set([...ADMINISTER, 'organization:own']),
  admin: new Set(ADMINISTER),
  editor: new Set(EDIT),
  contributor: new Set(CONTRIBUTE),
  viewer: new Set(READ),
};

/** What each role is, in the words the pages use. */
export const ROLE_DESCRIPTIONS: Readonly<Record<Role, string>> = {
  owner: 'Everything an admin may, hands the organization over and deletes it',
  admin: 'Members, channels, API keys, apps and webhooks, every post, and the data export',
  editor: 'Creates, schedules and publishes posts; uploads media',
  contributor: 'Writes drafts and uploads media; submits posts, which an editor approves',
  viewer: 'Sees posts, media and channels; changes nothing',
};

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

export function can(role: Role, permission: Permission): boolean {
  return PERMISSIONS[role].has(permission);
}

/** Whether `role` may do at least everything `other` may: a member hands out no more than they hold. */
export function includesRole(role: Role, other: Role): boolean {
  return ROLES.indexOf(role) <= ROLES.indexOf(other);
}

/** The lesser of two roles: a credential never acts above the member who made it. */
export function lesserRole(a: Role, b: Role): Role {
  return includesRole(a, b) ? b : a;
}

/** Who acts: the organization and the role they act with there (a member's, an API key's, an app's). */
export interface Actor {
  organizationId: string;
  role: Role;
  /** The person acting, when a signed-in member acts through the pages (a credential names its maker). */
  userId?: string;
}

/** `403 forbidden` unless the role may; `what` says in a few words what was refused. */
export function assertCan(actor: Pick<Actor, 'role'>, permission: Permission, what: string): void {
  if (!can(actor.role, permission)) {
    throw new ForbiddenError(`The ${actor.role} role may not ${what}.`);
  }
}

/**
 * The permission each Public API operation needs, from the OAuth scope the contract names for it: a
 * `read` scope is the permission of the same name, `posts:write` is drafting for the operations that
 * a contributor may call on drafts, where asking to schedule means asking for approval (the posts' own
 * rules then refuse the rest), and publishing for the others (approving and rejecting among them).
 * `undefined`: any credential may call it.
 */
export function operationPermission(operationId: string, scope: string | undefined): Permission | undefined {
  if (scope === undefined) return undefined;
  if (scope === 'posts:write') {
    // An import or a duplicate of drafts is a contributor's; importing scheduled rows is checked in the domain.
    const drafting = [
      'createPost',
      'updatePost',
      'deletePost',
      'schedulePost',
      'changePostStatus',
      'importPosts',
      'duplicatePost',
    ];
    return drafting.includes(operationId) ? 'posts:draft' : 'posts:publish';
  }
  if (!PERMISSIONS.owner.has(scope as Permission)) throw new Error(`The scope ${scope} is no permission of a role.`);
  return scope as Permission;
}
