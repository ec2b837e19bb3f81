import type { ColumnType, Selectable } from 'kysely';
import type { CreatedAt, Timestamp } from '../db/columns.js';
import type { Role } from '../core/roles.js';

export type ClientRegistration = 'settings' | 'dynamic' | 'metadata_document';
export type TokenEndpointAuthMethod = 'none' | 'client_secret_basic' | 'client_secret_post';

export interface OAuthAppTable {
  id: string;
  /**
   * The organization that registered the app and manages it; `null` for a client that registered
   * itself or is known by its metadata document (see `registration`).
   */
  organization_id: string | null;
  /** `pca_…`: a public identifier; for a metadata-document client, the https URL of its document. */
  client_id: string;
  name: string;
  description: string;
  /** Where the developer said the picture is; it was downloaded from there once. */
  picture_url: string | null;
  /** SHA-256 (hex) of the stored picture, its ETag; `null` when the app has no stored picture. */
  picture_sha256: string | null;
  /**
   * The first registered redirect URL, in canonical form: where an authorization request without
   * `redirect_uri` is answered.
   */
  redirect_uri: string;
  /** Every registered redirect URL (an app of Settings has one); see `matchRedirectUri`. */
  redirect_uris: ColumnType<string[], string, string>;
  /** SHA-256 of the current `pcs_…` client secret; `null` for a public client. */
  secret_hash: string | null;
  secret_last_four: string | null;
  /**
   * How the client came: `settings` (an organization's app), `dynamic` (RFC 7591 registration) or
   * `metadata_document` (its client_id is the URL of its metadata document). The last two are shown
   * as unverified on the consent page.
   */
  registration: ColumnType<ClientRegistration, ClientRegistration | undefined, ClientRegistration>;
  /** RFC 7591 `token_endpoint_auth_method`: `none` is a public client, which must use PKCE. */
  token_endpoint_auth_method: ColumnType<TokenEndpointAuthMethod, TokenEndpointAuthMethod | undefined, never>;
  /** When the client last redeemed a code at the token endpoint. */
  last_used_at: Timestamp | null;
  /** Until when the fetched metadata document is fresh (a metadata-document client only). */
  metadata_expires_at: Timestamp | null;
  secret_rotated_at: Timestamp | null;
  /**
   * How long the app's access tokens live, in seconds, with a refresh token beside each; `null`: they
   * never expire and no refresh token is issued (every app registered before expiry existed).
   */
  access_token_lifetime_seconds: number | null;
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
  /** When the token stops working; `null`: never (its app's tokens do not expire). */
  expires_at: Timestamp | null;
  /** The authorization (its code's id) the token descends from, when it came with a refresh token. */
  chain_id: string | null;
}

export interface OAuthRefreshTokenTable {
  id: string;
  /** SHA-256 of the `por_…` refresh token. */
  token_hash: string;
  grant_id: string;
  app_id: string;
  organization_id: string;
  /** The authorization (its code's id) every token of this chain descends from. */
  chain_id: string;
  /** RFC 8707: the resource the user authorized; a refresh may narrow it for one access token. */
  resource: string | null;
  /** The scopes the user authorized; a refresh may narrow them for one access token (RFC 6749 §6). */
  scope: string | null;
  created_at: CreatedAt;
  /** Unused until then, the token dies: each use issues a successor with a fresh idle time. */
  expires_at: Timestamp;
  /** When it was exchanged for its successor; presented again after that, it revokes its chain. */
  spent_at: Timestamp | null;
  revoked_at: Timestamp | null;
}

export type OAuthApp = Selectable<OAuthAppTable>;
export type OAuthGrant = Selectable<OAuthGrantTable>;
export type OAuthAuthorizationRequest = Selectable<OAuthAuthorizationRequestTable>;
export type OAuthCode = Selectable<OAuthCodeTable>;
export type OAuthRefreshToken = Selectable<OAuthRefreshTokenTable>;

declare module '../db/schema.js' {
  // Adds this feature's tables to the database type (see src/db/schema.ts).
  interface Database {
    oauth_apps: OAuthAppTable;
    oauth_app_pictures: OAuthAppPictureTable;
    oauth_grants: OAuthGrantTable;
    oauth_authorization_requests: OAuthAuthorizationRequestTable;
    oauth_codes: OAuthCodeTable;
    oauth_tokens: OAuthTokenTable;
    oauth_refresh_tokens: OAuthRefreshTokenTable;
  }
}
