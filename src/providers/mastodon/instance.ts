import type { Clock } from '../../core/clock.js';
import type { Config } from '../../core/config.js';
import { newId } from '../../core/ids.js';
import type { Keyring } from '../../crypto/keyring.js';
import type { Db } from '../../db/database.js';
import { transaction } from '../../db/transaction.js';
import { SiteRefusedError } from '../connection-contract.js';
import { siteOrigin } from '../site-origin.js';
import { MastodonError, MastodonUnreachableError, type MastodonApi } from './api.js';

/**
 * What the app asks of an account: its identity, and posting statuses with media. Not `read:statuses`:
 * a status whose answer was lost is found again by its Idempotency-Key, never by reading the account's
 * statuses (see MastodonAdapter).
 */
export const MASTODON_SCOPES = ['read:accounts', 'write:statuses', 'write:media'];

/** What an instance allows, from `configuration` of `GET /api/v2/instance`. */
export interface InstanceLimits {
  /** `statuses.max_characters`: the text and the content warning together, counted as Mastodon counts. */
  maxCharacters: number;
  maxMediaAttachments: number;
  /** Every URL in a status counts as this many characters. */
  charactersReservedPerUrl: number;
  supportedMimeTypes: string[];
  /** Bytes. */
  imageSizeLimit: number;
  /** Bytes (audio too). */
  videoSizeLimit: number;
  /** Characters of a media's description (alt text). */
  descriptionLimit: number;
}

/** Mastodon's own defaults (as mastodon.social announces them), for an instance that does not say. */
export const MASTODON_DEFAULT_LIMITS: InstanceLimits = {
  maxCharacters: 500,
  maxMediaAttachments: 4,
  charactersReservedPerUrl: 23,
  supportedMimeTypes: [
    'image/jpeg',
    'image/png',
    'image/gif',
    'image/webp',
    'video/mp4',
    'video/quicktime',
    'video/webm',
  ],
  imageSizeLimit: 16 * 1024 * 1024,
  videoSizeLimit: 99 * 1024 * 1024,
  descriptionLimit: 1500,
};

/** What this server knows of an instance, read from it. */
export interface InstanceInfo {
  limits: InstanceLimits;
  /** PKCE (S256), from the instance's OAuth metadata: Mastodon 4.3 and later. */
  pkce: boolean;
}

/** This installation's app on an instance. */
export interface InstanceApp {
  clientId: string;
  clientSecret: string;
}

// An instance's limits change rarely (an admin raising the character limit): read again after an hour.
const INFO_TTL_MS = 60 * 60_000;
// An instance that could not be asked is asked again after a minute, Mastodon's defaults meanwhile.
const FAILED_INFO_TTL_MS = 60_000;

/**
 * The instance a user named, as the origin every call goes to: a domain (`mastodon.social`), a URL
 * of the instance (`https://mastodon.social/@alice` names it too) or a handle (`@alice@mastodon.social`).
 */
export function instanceOrigin(input: string): { origin: string } | { problem: string } {
  const handle = /^@?[^@/\s]+@([^@/\s]+)$/.exec(input.trim());
  return siteOrigin(handle ? handle[1]! : input, 'an instance', 'mastodon.social');
}

/**
 * The instances this installation talks to: its app on each (registered once per instance, callback
 * URL and scopes, kept in `mastodon_apps` with the client secret encrypted), and each instance's
 * limits and OAuth support, read from it and kept for an hour.
 */
export class MastodonInstances {
  private readonly infos = new Map<string, { info: InstanceInfo; until: number }>();
  private readonly reading = new Map<string, Promise<InstanceInfo>>();
  private readonly registering = new Map<string, Promise<InstanceApp>>();

  constructor(
    private readonly api: MastodonApi,
    private readonly db: Db,
    private readonly keyring: Keyring,
    private readonly config: Pick<Config, 'mastodon' | 'publicUrl'>,
    private readonly clock: Clock,
  ) {}

  /**
   * The instance's limits and OAuth support; `MastodonUnreachableError` or `MastodonError` when it
   * cannot be read and nothing was read before.
   */
  async info(instance: string): Promise<InstanceInfo> {
    const cached = this.infos.get(instance);
    if (cached && cached.until > this.clock.now().getTime()) return cached.info;
    let reading = this.reading.get(instance);
    if (!reading) {
      reading = this.read(instance).finally(() => this.reading.delete(instance));
      this.reading.set(instance, reading);
    }
    try {
      const info = await reading;
      this.infos.set(instance, { info, until: this.clock.now().getTime() + INFO_TTL_MS });
      return info;
    } catch (error) {
      if (cached) return cached.info;
      throw error;
    }
  }

  /** Mastodon's own limits, for a channel whose instance is not known. */
  defaults(): InstanceLimits {
    return MASTODON_DEFAULT_LIMITS;
  }

  /** Forgets what was read of the instance: the next question asks it again. */
  forgetInfo(instance: string): void {
    this.infos.delete(instance);
  }

  /**
   * The instance's limits for the rules of a post: Mastodon's defaults while the instance cannot be
   * asked (they are the ones most instances keep), asked again a minute later.
   */
  async limits(instance: string): Promise<InstanceLimits> {
    try {
      return (await this.info(instance)).limits;
    } catch {
      const fallback = { limits: MASTODON_DEFAULT_LIMITS, pkce: false };
      this.infos.set(instance, { info: fallback, until: this.clock.now().getTime() + FAILED_INFO_TTL_MS });
      return fallback.limits;
    }
  }

  /**
   * Checks the instance a user named: it must answer as a Mastodon instance (`/api/v2/instance`),
   * and this installation's app is registered there. Its origin, or `SiteRefusedError` saying why not.
   */
  async prepare(input: string, redirectUri: string): Promise<string> {
    const named = instanceOrigin(input);
    if ('problem' in named) throw new SiteRefusedError(`${named.problem}`);
    const instance = named.origin;
    try {
      // Read afresh: the instance the user names now must answer now.
      this.forgetInfo(instance);
      await this.info(instance);
      await this.app(instance, redirectUri);
    } catch (error) {
      if (error instanceof MastodonUnreachableError) throw new SiteRefusedError(error.message);
      if (error instanceof MastodonError) {
        throw new SiteRefusedError(
          `${new URL(instance).host} does not answer as a Mastodon instance (${error.status}: ${error.message})`,
        );
      }
      throw error;
    }
    return instance;
  }

  /** This installation's app on the instance, registered there the first time (`POST /api/v1/apps`). */
  async app(instance: string, redirectUri: string): Promise<InstanceApp> {
    const known = await this.storedApp(instance, redirectUri);
    if (known) return known;
    const key = `${instance} ${redirectUri}`;
    let registering = this.registering.get(key);
    if (!registering) {
      registering = this.register(instance, redirectUri).finally(() => this.registering.delete(key));
      this.registering.set(key, registering);
    }
    return registering;
  }

  /** The app the instance knows by `clientId`, registered earlier (for a token of an app since replaced). */
  async appByClientId(instance: string, clientId: string): Promise<InstanceApp | undefined> {
    const row = await this.db
      .selectFrom('mastodon_apps')
      .selectAll()
      .where('instance', '=', instance)
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    return (
      row && { clientId: row.client_id, clientSecret: this.keyring.decrypt(row.client_secret, appSecretContext(row)) }
    );
  }

  /** Forgets an app the instance no longer knows (`invalid_client`): the next connection registers another. */
  async forgetApp(instance: string, clientId: string): Promise<void> {
    await this.db
      .deleteFrom('mastodon_apps')
      .where('instance', '=', instance)
      .where('client_id', '=', clientId)
      .execute();
  }

  private async storedApp(instance: string, redirectUri: string): Promise<InstanceApp | undefined> {
    const row = await this.db
      .selectFrom('mastodon_apps')
      .selectAll()
      .where('instance', '=', instance)
      .where('redirect_uri', '=', redirectUri)
      .where('scopes', '=', MASTODON_SCOPES.join(' '))
      .executeTakeFirst();
    return (
      row && { clientId: row.client_id, clientSecret: this.keyring.decrypt(row.client_secret, appSecretContext(row)) }
    );
  }

  private async register(instance: string, redirectUri: string): Promise<InstanceApp> {
    const settings = this.config.mastodon;
    const { data } = await this.api.call<{ client_id?: string; client_secret?: string }>(instance, '/api/v1/apps', {
      method: 'POST',
      json: {
        client_name: settings?.appName ?? 'Post Scheduler',
        redirect_uris: [redirectUri],
        scopes: MASTODON_SCOPES.join(' '),
        website: settings?.appWebsite ?? this.config.publicUrl,
      },
    });
    if (!data.client_id || !data.client_secret)
      throw new MastodonError(200, 'the app registration answered no client credentials', {});
    const row = {
      id: newId('mapp'),
      instance,
      redirect_uri: redirectUri,
      scopes: MASTODON_SCOPES.join(' '),
      client_id: data.client_id,
    };
    // Another process may have registered one meanwhile: the first stored is the one every process uses.
    return transaction(this.db, async (trx) => {
      await trx
        .insertInto('mastodon_apps')
        .values({ ...row, client_secret: this.keyring.encrypt(data.client_secret!, appSecretContext(row)) })
        .onConflict((conflict) => conflict.columns(['instance', 'redirect_uri', 'scopes']).doNothing())
        .execute();
      const stored = await trx
        .selectFrom('mastodon_apps')
        .selectAll()
        .where('instance', '=', instance)
        .where('redirect_uri', '=', redirectUri)
        .where('scopes', '=', row.scopes)
        .executeTakeFirstOrThrow();
      return {
        clientId: stored.client_id,
        clientSecret: this.keyring.decrypt(stored.client_secret, appSecretContext(stored)),
      };
    });
  }

  private async read(instance: string): Promise<InstanceInfo> {
    const [answer, metadata] = await Promise.all([
      this.api.call<InstanceAnswer>(instance, '/api/v2/instance', { method: 'GET' }),
      // Mastodon 4.3 and later serve their OAuth metadata (RFC 8414), which names PKCE's methods;
      // an older instance answers 404 and ignores a challenge.
      this.api.send(instance, '/.well-known/oauth-authorization-server', { method: 'GET' }).catch(() => undefined),
    ]);
    const configuration = answer.data.configuration;
    if (!configuration || typeof configuration !== 'object')
      throw new MastodonError(200, 'its /api/v2/instance has no configuration', {});
    return { limits: limitsOf(configuration), pkce: supportsPkce(metadata?.status, metadata?.body) };
  }
}

interface InstanceAnswer {
  configuration?: {
    statuses?: { max_characters?: unknown; max_media_attachments?: unknown; characters_reserved_per_url?: unknown };
    media_attachments?: {
      supported_mime_types?: unknown;
      image_size_limit?: unknown;
      video_size_limit?: unknown;
      description_limit?: unknown;
    };
  };
}

/** The instance's limits, each one it does not announce (older versions, other software) at Mastodon's default. */
function limitsOf(configuration: NonNullable<InstanceAnswer['configuration']>): InstanceLimits {
  const count = (value: unknown, fallback: number) =>
    typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : fallback;
  const { statuses = {}, media_attachments: media = {} } = configuration;
  const types = media.supported_mime_types;
  const defaults = MASTODON_DEFAULT_LIMITS;
  return {
    maxCharacters: count(statuses.max_characters, defaults.maxCharacters),
    maxMediaAttachments: count(statuses.max_media_attachments, defaults.maxMediaAttachments),
    charactersReservedPerUrl: count(statuses.characters_reserved_per_url, defaults.charactersReservedPerUrl),
    supportedMimeTypes:
      Array.isArray(types) && types.every((t) => typeof t === 'string') ? types : defaults.supportedMimeTypes,
    imageSizeLimit: count(media.image_size_limit, defaults.imageSizeLimit),
    videoSizeLimit: count(media.video_size_limit, defaults.videoSizeLimit),
    descriptionLimit: count(media.description_limit, defaults.descriptionLimit),
  };
}

function supportsPkce(status: number | undefined, body: string | undefined): boolean {
  if (status !== 200 || body === undefined) return false;
  try {
    const methods = (JSON.parse(body) as { code_challenge_methods_supported?: unknown })
      .code_challenge_methods_supported;
    return Array.isArray(methods) && methods.includes('S256');
  } catch {
    return false;
  }
}

/** Where an app's client secret is stored: it decrypts only there. */
export function appSecretContext(app: { instance: string; client_id: string }): string {
  return `mastodon_apps:${app.instance}:${app.client_id}:client_secret`;
}

/** Encrypts every Mastodon app's client secret with the keyring's current key; how many values were written. */
export async function reencryptMastodonApps(db: Db, keyring: Keyring): Promise<number> {
  return transaction(db, async (trx) => {
    let written = 0;
    const apps = await trx.selectFrom('mastodon_apps').selectAll().forUpdate().execute();
    for (const app of apps) {
      const secret = keyring.reencrypted(app.client_secret, appSecretContext(app));
      if (secret === undefined) continue;
      await trx.updateTable('mastodon_apps').set({ client_secret: secret }).where('id', '=', app.id).execute();
      written += 1;
    }
    return written;
  });
}
