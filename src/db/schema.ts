import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

/** A timestamp column: read as a Date, written as a Date or an ISO string. */
type Timestamp = ColumnType<Date, Date | string, Date | string>;
type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
/** `bigint` columns come back as strings from both drivers (PGlite is configured like pg). */
type BigIntColumn = ColumnType<string, number | bigint | string, number | bigint | string>;

export interface OrganizationTable {
  id: string;
  name: string;
  created_at: CreatedAt;
}

export interface UserTable {
  id: string;
  /** Stored lower-cased; unique. */
  email: string;
  name: string;
  password_hash: string;
  created_at: CreatedAt;
}

export interface MembershipTable {
  organization_id: string;
  user_id: string;
  role: 'owner' | 'member';
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
  created_at: CreatedAt;
  last_used_at: Timestamp | null;
  revoked_at: Timestamp | null;
}

export interface ChannelTable {
  id: string;
  organization_id: string;
  provider: 'youtube' | 'tiktok' | 'sandbox';
  name: string;
  username: string | null;
  picture: string | null;
  disabled: Generated<boolean>;
  created_at: CreatedAt;
}

export type PostStatus = 'draft' | 'scheduled' | 'publishing' | 'published' | 'failed';

export interface PostTable {
  id: string;
  organization_id: string;
  group_id: string;
  channel_id: string;
  content: string;
  media_ids: ColumnType<string[], string, string>;
  settings: ColumnType<unknown, string | null, string | null>;
  status: PostStatus;
  scheduled_at: Timestamp | null;
  published_at: Timestamp | null;
  release_id: string | null;
  release_url: string | null;
  error: string | null;
  created_at: CreatedAt;
  updated_at: Timestamp;
}

export interface MediaTable {
  id: string;
  organization_id: string;
  file_name: string;
  content_type: string;
  kind: 'image' | 'video';
  size: BigIntColumn;
  storage_key: string;
  created_at: CreatedAt;
}

/** A create that succeeded with an `Idempotency-Key`, kept to answer its retries. */
export interface IdempotencyKeyTable {
  organization_id: string;
  /** SHA-256 of the key as the client sent it. */
  key_hash: string;
  /** SHA-256 of the request body in canonical JSON, to tell a retry from another request. */
  request_hash: string;
  response_status: number | null;
  /** The response body's JSON text. */
  response_body: string | null;
  created_at: Timestamp;
}

/** A signed upload: declared at creation, checked and turned into media when completed. */
export interface UploadTable {
  id: string;
  organization_id: string;
  file_name: string;
  /** The declared type; the bytes must match it. */
  content_type: string;
  /** The declared size in bytes. */
  size: BigIntColumn;
  storage_key: string;
  /** When the signed PUT URL stops working. */
  expires_at: Timestamp;
  /** The media it became, once completed. */
  media_id: string | null;
  /** Why completing it was refused; a refused upload stays refused. */
  failure: string | null;
  /** A request is completing it until then (a lease, so a crashed request does not block it forever). */
  completing_until: Timestamp | null;
  created_at: CreatedAt;
}

export interface RateLimitWindowTable {
  bucket: string;
  window_start: Timestamp;
  count: number;
}

export interface InstanceSecretTable {
  name: string;
  value: string;
  created_at: CreatedAt;
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
  created_at: CreatedAt;
  last_used_at: Timestamp | null;
  revoked_at: Timestamp | null;
}

export interface Database {
  organizations: OrganizationTable;
  users: UserTable;
  memberships: MembershipTable;
  api_keys: ApiKeyTable;
  channels: ChannelTable;
  posts: PostTable;
  media: MediaTable;
  idempotency_keys: IdempotencyKeyTable;
  uploads: UploadTable;
  rate_limit_windows: RateLimitWindowTable;
  instance_secrets: InstanceSecretTable;
  sessions: SessionTable;
  oauth_apps: OAuthAppTable;
  oauth_app_pictures: OAuthAppPictureTable;
  oauth_grants: OAuthGrantTable;
  oauth_authorization_requests: OAuthAuthorizationRequestTable;
  oauth_codes: OAuthCodeTable;
  oauth_tokens: OAuthTokenTable;
}

export type Organization = Selectable<OrganizationTable>;
export type User = Selectable<UserTable>;
export type NewUser = Insertable<UserTable>;
export type ApiKey = Selectable<ApiKeyTable>;
export type Channel = Selectable<ChannelTable>;
export type NewChannel = Insertable<ChannelTable>;
export type Post = Selectable<PostTable>;
export type NewPost = Insertable<PostTable>;
export type PostUpdate = Updateable<PostTable>;
export type Media = Selectable<MediaTable>;
export type Session = Selectable<SessionTable>;
export type OAuthApp = Selectable<OAuthAppTable>;
export type OAuthGrant = Selectable<OAuthGrantTable>;
export type OAuthAuthorizationRequest = Selectable<OAuthAuthorizationRequestTable>;
export type OAuthCode = Selectable<OAuthCodeTable>;
export type IdempotencyKey = Selectable<IdempotencyKeyTable>;
export type NewMedia = Insertable<MediaTable>;
export type Upload = Selectable<UploadTable>;
export type NewUpload = Insertable<UploadTable>;
