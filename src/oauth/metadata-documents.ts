import type { Clock } from '../core/clock.js';
import { DomainError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import type { Db } from '../db/database.js';
import type { OutboundClient } from '../net/outbound-client.js';
import { EXPIRING_ACCESS_TOKEN_SECONDS } from './apps.js';
import { OAuthError } from './errors.js';
import { checkClientName, checkRedirectUris } from './registration.js';
import type { OAuthApp } from './tables.js';
import { isMetadataDocumentUrl } from './urls.js';

/** A client's metadata document is a few hundred bytes; anything past this is refused unread. */
export const MAX_METADATA_DOCUMENT_BYTES = 5 * 1024;
/** A document is fetched again after its Cache-Control max-age, kept within these bounds. */
const MIN_CACHE_SECONDS = 60;
const MAX_CACHE_SECONDS = 86_400;
const DEFAULT_CACHE_SECONDS = 3600;

type Lookup = { app: OAuthApp } | { message: string } | undefined;

/** The document's Cache-Control max-age, within the bounds; the default without one. */
function cacheSeconds(cacheControl: string | undefined): number {
  if (cacheControl === undefined) return DEFAULT_CACHE_SECONDS;
  if (/\b(no-store|no-cache)\b/i.test(cacheControl)) return MIN_CACHE_SECONDS;
  const maxAge = /\bmax-age=(\d+)/i.exec(cacheControl);
  if (!maxAge) return DEFAULT_CACHE_SECONDS;
  return Math.min(MAX_CACHE_SECONDS, Math.max(MIN_CACHE_SECONDS, Number(maxAge[1])));
}

/**
 * OAuth Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document, which the MCP
 * authorization specification uses): a client whose client_id is an https URL is described by the JSON
 * document at that URL. The document is fetched through the outbound address policy of media
 * downloads (MEDIA_FETCH_ALLOW_PRIVATE, MEDIA_FETCH_ALLOW_RANGES), without following redirects, within
 * a size and a time cap, and kept as an `oauth_apps` row of no organization until its Cache-Control
 * max-age (within bounds) runs out. Such a client is public: its codes are protected by PKCE.
 */
export class ClientMetadataDocuments {
  constructor(
    private readonly db: Db,
    private readonly outbound: OutboundClient,
    private readonly timeoutSeconds: number,
    private readonly clock: Clock,
  ) {}

  /**
   * The client of this id when it is a metadata document's URL; `undefined` for any other id.
   * `mayFetch` is asked before a fetch (not for a document still fresh), so that fetches can be
   * limited per client address like registrations.
   */
  async lookup(clientId: string, mayFetch: () => Promise<boolean>): Promise<Lookup> {
    if (!isMetadataDocumentUrl(clientId)) return undefined;
    const now = this.clock.now();
    const stored = await this.db
      .selectFrom('oauth_apps')
      .selectAll()
      .where('client_id', '=', clientId)
      .where('registration', '=', 'metadata_document')
      .executeTakeFirst();
    if (stored?.metadata_expires_at && stored.metadata_expires_at.getTime() > now.getTime()) return { app: stored };
    if (!(await mayFetch())) {
      return { message: 'Too many new apps were looked up from your address; try again in a while.' };
    }
    const fetched = await this.fetch(clientId);
    if ('message' in fetched) {
      return { message: `The app’s description at ${clientId} could not be used: ${fetched.message}` };
    }
    const values = {
      name: fetched.name,
      redirect_uri: fetched.redirectUris[0]!,
      redirect_uris: JSON.stringify(fetched.redirectUris),
      metadata_expires_at: new Date(now.getTime() + fetched.cacheSeconds * 1000),
      updated_at: now,
    };
    const app = await this.db
      .insertInto('oauth_apps')
      .values({
        id: newId('app'),
        organization_id: null,
        client_id: clientId,
        description: '',
        picture_url: null,
        secret_hash: null,
        secret_last_four: null,
        registration: 'metadata_document',
        token_endpoint_auth_method: 'none',
        created_at: now,
        // An agent's tokens are short, with refresh tokens: nobody vouches for the client.
        access_token_lifetime_seconds: EXPIRING_ACCESS_TOKEN_SECONDS,
        ...values,
      })
      .onConflict((oc) => oc.column('client_id').doUpdateSet(values))
      .returningAll()
      .executeTakeFirstOrThrow();
    return { app };
  }

  private async fetch(
    url: string,
  ): Promise<{ name: string; redirectUris: string[]; cacheSeconds: number } | { message: string }> {
    let response;
    try {
      response = await this.outbound.call(url, {
        method: 'GET',
        headers: { Accept: 'application/json', 'User-Agent': 'post-scheduler-oauth' },
        trusted: false,
        timeoutSeconds: this.timeoutSeconds,
        maxResponseBytes: MAX_METADATA_DOCUMENT_BYTES + 1,
      });
    } catch (error) {
      if (error instanceof DomainError) return { message: `${error.details?.[0]?.message ?? error.message}.` };
      return { message: `it could not be fetched within ${this.timeoutSeconds} seconds.` };
    }
    if (response.status !== 200) return { message: `it answered HTTP ${response.status}, not 200.` };
    if (response.body.length > MAX_METADATA_DOCUMENT_BYTES)
      return { message: `it is larger than ${MAX_METADATA_DOCUMENT_BYTES} bytes.` };
    let document: unknown;
    try {
      document = JSON.parse(response.body.toString('utf8'));
    } catch {
      return { message: 'it is not JSON.' };
    }
    if (typeof document !== 'object' || document === null || Array.isArray(document))
      return { message: 'it is not a JSON object.' };
    const metadata = document as Record<string, unknown>;
    if (metadata.client_id !== url) return { message: 'its client_id is not the URL it was fetched from.' };
    if (metadata.client_secret !== undefined || (metadata.token_endpoint_auth_method ?? 'none') !== 'none')
      return { message: 'it must describe a public client (token_endpoint_auth_method none, no client_secret).' };
    try {
      const redirectUris = checkRedirectUris(metadata.redirect_uris);
      const name = checkClientName(metadata.client_name, redirectUris);
      const cacheControl = response.headers['cache-control'];
      return {
        name,
        redirectUris,
        cacheSeconds: cacheSeconds(typeof cacheControl === 'string' ? cacheControl : undefined),
      };
    } catch (error) {
      if (error instanceof OAuthError) return { message: error.message };
      throw error;
    }
  }
}
