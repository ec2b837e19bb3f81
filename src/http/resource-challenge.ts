/**
 * The protected resources this installation serves (RFC 9728) and the `WWW-Authenticate` challenge
 * their `401` and `403` answers carry (RFC 6750 §3), which tells a client where to read the
 * resource's metadata and so find the authorization server that issues its tokens.
 */

/** Where RFC 9728 §3 puts protected resource metadata: this, followed by the resource's path. */
export const PROTECTED_RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

/** The paths of the protected resources under the origin; the origin itself is the resource of both. */
export const PUBLIC_API_RESOURCE_PATH = '/public/v1';
export const MCP_RESOURCE_PATH = '/mcp';

/** Each resource an access token may be meant for (RFC 8707), by its identifier's path. */
export type ResourcePath = '' | typeof PUBLIC_API_RESOURCE_PATH | typeof MCP_RESOURCE_PATH;
export const RESOURCE_PATHS: readonly ResourcePath[] = ['', PUBLIC_API_RESOURCE_PATH, MCP_RESOURCE_PATH];

/**
 * The address of a resource's metadata, derived from its identifier as RFC 9728 §3.1 says: the
 * well-known segment goes between the host and the path (`https://h/mcp` →
 * `https://h/.well-known/oauth-protected-resource/mcp`). The identifier has no query or fragment.
 */
export function resourceMetadataUrl(resourceUrl: string): string {
  const url = new URL(resourceUrl);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/+$/, '');
  return `${url.origin}${PROTECTED_RESOURCE_METADATA_PATH}${path}`;
}

/** Why a request with a credential was refused (RFC 6750 §3.1); none when it sent no credential. */
export interface ChallengeError {
  error: 'invalid_token' | 'insufficient_scope';
  /** For the developer; printable ASCII without `"` or `\` (RFC 6750 §3). */
  description?: string;
  /** With `insufficient_scope`: the scopes the request needs, space-separated. */
  scope?: string;
}

// RFC 6750 §3: the attribute values are quoted strings of %x20-21 / %x23-5B / %x5D-7E.
const quoted = (value: string) => `"${value.replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, ' ')}"`;

/**
 * The `WWW-Authenticate` value of a `401` or `403` of the resource `resourceUrl` (e.g.
 * `https://h/mcp`): `Bearer resource_metadata="…"` (RFC 9728 §5.1), and with a refused credential the
 * RFC 6750 `error`, `error_description` and (for `insufficient_scope`) `scope`. Without a credential the
 * challenge carries no error code (RFC 6750 §3.1).
 */
export function protectedResourceChallenge(resourceUrl: string, failure?: ChallengeError, realm?: string): string {
  const attributes: string[] = [];
  if (realm !== undefined) attributes.push(`realm=${quoted(realm)}`);
  attributes.push(`resource_metadata=${quoted(resourceMetadataUrl(resourceUrl))}`);
  if (failure) {
    attributes.push(`error=${quoted(failure.error)}`);
    if (failure.description !== undefined) attributes.push(`error_description=${quoted(failure.description)}`);
    if (failure.scope !== undefined) attributes.push(`scope=${quoted(failure.scope)}`);
  }
  return `Bearer ${attributes.join(', ')}`;
}

/**
 * Whether a token meant for `audience` (RFC 8707 `resource`) may be used at the resource `resourceUrl`:
 * a token for no resource in particular (API keys, and OAuth tokens issued without `resource`) and one
 * for the whole origin go everywhere; one for the Public API or the MCP server goes there only.
 */
export function audienceAccepts(audience: string | null | undefined, resourceUrl: string): boolean {
  if (audience === null || audience === undefined) return true;
  return audience === resourceUrl || audience === new URL(resourceUrl).origin;
}

/**
 * The canonical identifier of `value` if it names a resource of the installation at `origin`
 * (RFC 8707 §2: an absolute URI without a fragment), else `undefined`. The origin may be given with
 * its trailing slash (`https://h/`), as URL libraries write it.
 */
export function knownResource(origin: string, value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (value.includes('#') || url.search !== '' || url.username !== '' || url.password !== '') return undefined;
  const path = url.pathname === '/' ? '' : url.pathname;
  const resource = `${url.origin}${path}`;
  return url.origin === origin && RESOURCE_PATHS.some((known) => `${origin}${known}` === resource)
    ? resource
    : undefined;
}
