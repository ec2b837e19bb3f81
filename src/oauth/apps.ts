import { NotFoundError, ValidationError, type ErrorDetail } from '../core/errors.js';
import { newId, randomBase62 } from '../core/ids.js';
import { generateCredential, hashSecret, secretMatchesHash } from '../crypto/issued-secrets.js';
import type { Db } from '../db/database.js';
import { recordAudit, type AuditActor } from '../audit/log.js';
import type { AppPicture, AppPictureDownloader } from './app-pictures.js';
import type { OAuthApp } from './tables.js';
import { checkPictureUrl, checkRedirectUri, isMetadataDocumentUrl } from './urls.js';
import { transaction } from '../db/transaction.js';

export const CLIENT_ID_PREFIX = 'pca_';
export const CLIENT_ID_RANDOM_LENGTH = 24;
const CLIENT_ID = new RegExp(`^${CLIENT_ID_PREFIX}[0-9A-Za-z]{${CLIENT_ID_RANDOM_LENGTH}}$`);
const MAX_NAME_LENGTH = 100;
const MAX_DESCRIPTION_LENGTH = 1000;

/** What a developer enters in Settings → Developers → Apps. */
export interface AppDetails {
  name: string;
  description: string;
  /** Empty for no picture. */
  pictureUrl: string;
  redirectUri: string;
  /**
   * Whether access tokens expire after `EXPIRING_ACCESS_TOKEN_SECONDS`, with refresh tokens; left out,
   * a new app's do not and an app's choice stays as it is.
   */
  expiringTokens?: boolean;
}

/** The lifetime of an access token of an app that chose expiring tokens: one hour. */
export const EXPIRING_ACCESS_TOKEN_SECONDS = 3600;

/**
 * How long the app's access tokens live, in seconds, each with a refresh token; `null`: they never
 * expire and come without a refresh token, as for every app registered before tokens could expire.
 * The one place that decides it: the token endpoint asks here for each token it issues.
 */
export function accessTokenLifetime(app: Pick<OAuthApp, 'access_token_lifetime_seconds'>): number | null {
  return app.access_token_lifetime_seconds;
}

/** Checks the details that need no download; returns them as stored, and the problems found. */
function checkFields(details: AppDetails) {
  const problems: ErrorDetail[] = [];
  const name = details.name.trim();
  const description = details.description.trim();
  if (!name) problems.push({ path: 'name', message: 'Enter the name users will see on the consent page.' });
  if (name.length > MAX_NAME_LENGTH)
    problems.push({ path: 'name', message: `The name must be at most ${MAX_NAME_LENGTH} characters.` });
  if (description.length > MAX_DESCRIPTION_LENGTH) {
    problems.push({
      path: 'description',
      message: `The description must be at most ${MAX_DESCRIPTION_LENGTH} characters.`,
    });
  }
  const redirect = checkRedirectUri(details.redirectUri);
  if (!redirect.ok) problems.push({ path: 'redirectUri', message: redirect.message });
  let pictureUrl: string | null = null;
  if (details.pictureUrl.trim()) {
    const picture = checkPictureUrl(details.pictureUrl);
    if (picture.ok) pictureUrl = picture.url;
    else problems.push({ path: 'pictureUrl', message: picture.message });
  }
  const lifetime =
    details.expiringTokens === undefined
      ? {}
      : { access_token_lifetime_seconds: details.expiringTokens ? EXPIRING_ACCESS_TOKEN_SECONDS : null };
  return {
    problems,
    values: {
      name,
      description,
      picture_url: pictureUrl,
      redirect_uri: redirect.ok ? redirect.url : '',
      redirect_uris: JSON.stringify(redirect.ok ? [redirect.url] : []),
      ...lifetime,
    },
  };
}

/**
 * Checks the details and downloads the picture when its URL is new (`stored` is what the app has now),
 * or throws a ValidationError naming each bad field. `picture` is `undefined` when the stored one stays.
 */
async function checkDetails(details: AppDetails, pictures: AppPictureDownloader, stored?: OAuthApp) {
  const { problems, values } = checkFields(details);
  let picture: AppPicture | null | undefined = null;
  const url = values.picture_url;
  if (url && stored?.picture_url === url && stored.picture_sha256 !== null) {
    picture = undefined;
  } else if (url && !problems.some((problem) => problem.path === 'pictureUrl')) {
    const download = await pictures.download(url);
    if (download.ok) picture = download.picture;
    else problems.push({ path: 'pictureUrl', message: download.message });
  }
  if (problems.length > 0) throw new ValidationError('The app details are not valid.', problems);
  const pictureVersion = picture === undefined ? {} : { picture_sha256: picture?.sha256 ?? null };
  return { values: { ...values, ...pictureVersion }, picture };
}

/** Stores a new picture of the app, or removes its picture (`null`), in the caller's transaction. */
async function replacePicture(trx: Db, appId: string, picture: AppPicture | null): Promise<void> {
  if (picture === null) {
    await trx.deleteFrom('oauth_app_pictures').where('app_id', '=', appId).execute();
    return;
  }
  const row = { content_type: picture.contentType, bytes: picture.bytes };
  await trx
    .insertInto('oauth_app_pictures')
    .values({ app_id: appId, ...row })
    .onConflict((oc) => oc.column('app_id').doUpdateSet(row))
    .execute();
}

/**
 * Registers an app, with its picture downloaded from the given URL; the returned `secret` is the only
 * time the client secret exists in clear.
 */
export async function registerApp(
  db: Db,
  organizationId: string,
  details: AppDetails,
  pictures: AppPictureDownloader,
  now: Date,
  /** Who registers it; the operator when no member does (the admin CLI, fixtures). */
  actor: AuditActor = 'operator',
): Promise<{ app: OAuthApp; secret: string }> {
  const { values, picture } = await checkDetails(details, pictures);
  const secret = generateCredential('pcs_');
  const app = await transaction(db, async (trx) => {
    const inserted = await trx
      .insertInto('oauth_apps')
      .values({
        id: newId('app'),
        organization_id: organizationId,
        client_id: CLIENT_ID_PREFIX + randomBase62(CLIENT_ID_RANDOM_LENGTH),
        ...values,
        secret_hash: hashSecret(secret),
        secret_last_four: secret.slice(-4),
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    if (picture) await replacePicture(trx, inserted.id, picture);
    await recordAudit(trx, {
      organizationId,
      actor,
      action: 'oauth_app.registered',
      subject: { type: 'oauth_app', id: inserted.id, label: inserted.name },
    });
    return inserted;
  });
  return { app, secret };
}

/**
 * Changes an app's details. The picture is downloaded again only when its URL changed (or none is
 * stored yet), so editing the description never depends on the developer's image host.
 */
export async function updateApp(
  db: Db,
  organizationId: string,
  appId: string,
  details: AppDetails,
  now: Date,
  pictures: AppPictureDownloader,
): Promise<OAuthApp> {
  const stored = await findApp(db, organizationId, appId);
  if (!stored) throw new NotFoundError('No app with this id in the organization.');
  const { values, picture } = await checkDetails(details, pictures, stored);
  const app = await transaction(db, async (trx) => {
    const updated = await trx
      .updateTable('oauth_apps')
      .set({ ...values, updated_at: now })
      .where('organization_id', '=', organizationId)
      .where('id', '=', appId)
      .returningAll()
      .executeTakeFirst();
    if (updated && picture !== undefined) await replacePicture(trx, appId, picture);
    return updated;
  });
  if (!app) throw new NotFoundError('No app with this id in the organization.');
  return app;
}

/**
 * Replaces the client secret. The old one stops working for the very next request, since only the
 * new hash is kept; access and refresh tokens already issued are not touched (a refresh needs the
 * client's secret too, so a refresh token that leaked with the old secret is of no use to anybody).
 */
export async function rotateAppSecret(
  db: Db,
  organizationId: string,
  appId: string,
  now: Date,
  actor: AuditActor = 'operator',
): Promise<{ app: OAuthApp; secret: string }> {
  const secret = generateCredential('pcs_');
  const app = await transaction(db, async (trx) => {
    const rotated = await trx
      .updateTable('oauth_apps')
      .set({
        secret_hash: hashSecret(secret),
        secret_last_four: secret.slice(-4),
        secret_rotated_at: now,
        updated_at: now,
      })
      .where('organization_id', '=', organizationId)
      .where('id', '=', appId)
      .returningAll()
      .executeTakeFirst();
    if (rotated) {
      await recordAudit(trx, {
        organizationId,
        actor,
        action: 'oauth_app.secret_rotated',
        subject: { type: 'oauth_app', id: rotated.id, label: rotated.name },
      });
    }
    return rotated;
  });
  if (!app) throw new NotFoundError('No app with this id in the organization.');
  return { app, secret };
}

/** Deletes the app with its grants, pending consent requests, codes and tokens (the foreign keys cascade). */
export async function deleteApp(
  db: Db,
  organizationId: string,
  appId: string,
  actor: AuditActor = 'operator',
): Promise<void> {
  await transaction(db, async (trx) => {
    const deleted = await trx
      .deleteFrom('oauth_apps')
      .where('organization_id', '=', organizationId)
      .where('id', '=', appId)
      .returning(['id', 'name'])
      .executeTakeFirst();
    if (!deleted) throw new NotFoundError('No app with this id in the organization.');
    await recordAudit(trx, {
      organizationId,
      actor,
      action: 'oauth_app.deleted',
      subject: { type: 'oauth_app', id: deleted.id, label: deleted.name },
    });
  });
}

export function listApps(db: Db, organizationId: string): Promise<OAuthApp[]> {
  return db
    .selectFrom('oauth_apps')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}

/** An app of this organization; another organization's app is `undefined`, exactly like an unknown one. */
export function findApp(db: Db, organizationId: string, appId: string): Promise<OAuthApp | undefined> {
  return db
    .selectFrom('oauth_apps')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', '=', appId)
    .executeTakeFirst();
}

/**
 * A value that does not have the shape of a client id (`pca_…`, or the https URL of a client's
 * metadata document) is unknown without asking the database (it may hold what no query can take,
 * such as U+0000).
 */
export function findAppByClientId(db: Db, clientId: string): Promise<OAuthApp | undefined> {
  if (!CLIENT_ID.test(clientId) && !isMetadataDocumentUrl(clientId)) return Promise.resolve(undefined);
  return db.selectFrom('oauth_apps').selectAll().where('client_id', '=', clientId).executeTakeFirst();
}

/**
 * The app whose id and secret these are, or `undefined`; unknown client and wrong secret are not told
 * apart. A public client (no secret) is authenticated by its client id alone, and only without a
 * secret; a confidential one never without its secret.
 */
export async function authenticateApp(
  db: Db,
  clientId: string,
  clientSecret: string | undefined,
): Promise<OAuthApp | undefined> {
  const app = await findAppByClientId(db, clientId);
  if (!app) return undefined;
  if (app.secret_hash === null) return clientSecret === undefined ? app : undefined;
  if (clientSecret === undefined || !secretMatchesHash(clientSecret, app.secret_hash)) return undefined;
  return app;
}

/** The stored picture of the app with this client id, with its version (the ETag). */
export function findAppPicture(db: Db, clientId: string) {
  if (!CLIENT_ID.test(clientId)) return Promise.resolve(undefined);
  return db
    .selectFrom('oauth_app_pictures as p')
    .innerJoin('oauth_apps as a', 'a.id', 'p.app_id')
    .select(['p.content_type as contentType', 'p.bytes', 'a.picture_sha256 as sha256'])
    .where('a.client_id', '=', clientId)
    .executeTakeFirst();
}
