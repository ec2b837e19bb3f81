import type { Generated, Insertable, Selectable } from 'kysely';
import type { CreatedAt, Timestamp } from '../db/columns.js';
import type { Role } from '../core/roles.js';

export interface OrganizationTable {
  id: string;
  name: string;
  /** The IANA zone its channels' posting schedules are read in (`UTC` until an admin chooses). */
  time_zone: Generated<string>;
  created_at: CreatedAt;
}

export interface UserTable {
  id: string;
  /** Stored lower-cased; unique. */
  email: string;
  name: string;
  password_hash: string;
  created_at: CreatedAt;
  /** When a link mailed to `email` was followed; `null` until then. */
  email_verified_at: Timestamp | null;
  /** An address the user changed to, used once its link is followed; `email` stays until then. */
  pending_email: string | null;
}

export interface MembershipTable {
  organization_id: string;
  user_id: string;
  role: Role;
  created_at: CreatedAt;
}

export interface ApiKeyTable {
  id: string;
  organization_id: string;
  name: string;
  /** SHA-256 of the whole key; the key itself is never stored. */
  secret_hash: string;
  /** The key's first characters, shown in lists to tell keys apart. */
  prefix: string;
  last_four: string;
  /** The role the key acts with; `null`: a key made before roles or by an operator, which acts as an owner. */
  role: Role | null;
  /** The member who made the key; `null` for an operator's key, a key made before roles, or a deleted user. */
  created_by_user_id: string | null;
  created_at: CreatedAt;
  last_used_at: Timestamp | null;
  revoked_at: Timestamp | null;
}

export interface SessionTable {
  id: string;
  /** SHA-256 of the session token in the browser's cookie; the token itself is never stored. */
  token_hash: string;
  user_id: string;
  /** The organization the user is acting for (the organization switcher sets it). */
  organization_id: string | null;
  created_at: CreatedAt;
  expires_at: Timestamp;
}

/** A single-use link mailed to a user: a password reset, or the verification of an address. */
export interface AccountMailTokenTable {
  /** SHA-256 of the token in the link; the token itself is never stored. */
  token_hash: string;
  user_id: string;
  purpose: 'password_reset' | 'email_verification';
  /** The address the link was sent to (for a verification, the address it verifies). */
  email: string;
  expires_at: Timestamp;
  used_at: Timestamp | null;
  created_at: CreatedAt;
}

/** An email invited to join an organization with a role, through a single-use link. */
export interface InvitationTable {
  id: string;
  organization_id: string;
  /** Stored lower-cased, as the inviter typed it; whoever opens the link may accept it. */
  email: string;
  role: Exclude<Role, 'owner'>;
  /** SHA-256 of the `inv_…` token in the link; the token itself is never stored. */
  token_hash: string;
  invited_by_user_id: string | null;
  created_at: CreatedAt;
  expires_at: Timestamp;
  accepted_at: Timestamp | null;
  revoked_at: Timestamp | null;
}

export type Organization = Selectable<OrganizationTable>;
export type User = Selectable<UserTable>;
export type NewUser = Insertable<UserTable>;
export type ApiKey = Selectable<ApiKeyTable>;
export type Session = Selectable<SessionTable>;

declare module '../db/schema.js' {
  // Adds this feature's tables to the database type (see src/db/schema.ts).
  interface Database {
    organizations: OrganizationTable;
    users: UserTable;
    memberships: MembershipTable;
    api_keys: ApiKeyTable;
    sessions: SessionTable;
    account_mail_tokens: AccountMailTokenTable;
    invitations: InvitationTable;
  }
}
