import type { Selectable } from 'kysely';
import type { CreatedAt, Timestamp } from '../db/columns.js';
import type { Role } from '../core/roles.js';

export interface OAuthAppTable {
  id: string;
  /** The organization that registered the app and manages it. */
  organization_id: string;
  /** `pca_…`: a public identifier. */
  client_id: string;
  name: string;
  description: string;
  /** Where the developer said the picture is; it was downloaded from there once. */
  picture_url: string | null;
  /** SHA-256 (hex) of the stored picture, its ETag; `null` when the app has no stored picture. */
  picture_sha256: string | null;
  /** The one registered redirect URL, in canonical form; authorization requests must match it exactly. */
  redirect_uri: string;
  /** SHA-256 of the current `pcs_…` client secret. */
  secret_hash: string;
  secret_last_four: string;
  secret_rotated_at: Timestamp | null;
  created_at: CreatedAt;
  updated_at: Timestamp;
}

/** An app's picture as downloaded from its `picture_url`, served from this installation. */
export interface OAuthAppPictureTable {
  app_id: string;
  /** image/png, image/jpeg, image/gif or image/webp, as recognised from the bytes. */
  content_type: string;
  bytes: Uint8Array;
}

export interface OAuthGrantTable {
  id: string;
  app_id: string;
  organization_id: string;
  approved_by_user_id: string | null;
  /** The role the app acts with: its approver's; `null` for a grant made before roles, which acts as an owner. */
  role: Role | null;
  approved_at: Timestamp;
  created_at: CreatedAt;
}

export interface OAuthAuthorizationRequestTable {
  id: string;
  session_id: string;
  app_id: string;
  organization_id: string;
  /** Where the page said the answer goes: the app's registered redirect URL at the time. */
  redirect_uri: string;
  /** Whether the app sent `redirect_uri`, which the token request must then repeat. */
  redirect_uri_given: boolean;
  state: string | null;
  /** PKCE S256 challenge, when the app sent one. */
  code_challenge: string | null;
  /** RFC 8707: the resource the token is meant for (its audience); `null`: every resource. */
  resource: string | null;
  /** The scopes granted, space-separated; `null`: every operation (tokens asked for without `scope`). */
  scope: string | null;
  created_at: CreatedAt;
  expires_at: Timestamp;
}

export interface OAuthCodeTable {
  id: string;
  /** SHA-256 of the `pac_…` code. */
  code_hash: string;
  grant_id: string;
  app_id: string;
  organization_id: string;
  redirect_uri: string | null;
  code_challenge: string | null;
  /** RFC 8707: the resource the token is meant for (its audience); `null`: every resource. */
  resource: string | null;
  /** The scopes granted, space-separated; `null`: every operation (tokens asked for without `scope`). */
  scope: string | null;
  created_at: CreatedAt;
  expires_at: Timestamp;
  consumed_at: Timestamp | null;
}

export interface OAuthTokenTable {
  id: string;
  /** SHA-256 of the `pos_…` access token. */
  token_hash: string;
  grant_id: string;
  app_id: string;
  organization_id: string;
  /** The code the token was issued for; a second redemption of that code revokes the token. */
  code_id: string | null;
  /** RFC 8707: the resource the token is meant for (its audience); `null`: every resource. */
  resource: string | null;
  /** The scopes granted, space-separated; `null`: every operation (tokens asked for without `scope`). */
  scope: string | null;
  created_at: CreatedAt;
  last_used_at: Timestamp | null;
  revoked_at: Timestamp | null;
}

export type OAuthApp = Selectable<OAuthAppTable>;
export type OAuthGrant = Selectable<OAuthGrantTable>;
export type OAuthAuthorizationRequest = Selectable<OAuthAuthorizationRequestTable>;
export type OAuthCode = Selectable<OAuthCodeTable>;

declare module '../db/schema.js' {
  // Adds this feature's tables to the database type (see src/db/schema.ts).
  interface Database {
    oauth_apps: OAuthAppTable;
    oauth_app_pictures: OAuthAppPictureTable;
    oauth_grants: OAuthGrantTable;
    oauth_authorization_requests: OAuthAuthorizationRequestTable;
    oauth_codes: OAuthCodeTable;
    oauth_tokens: OAuthTokenTable;
  }
}
