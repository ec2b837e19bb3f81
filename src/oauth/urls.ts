const MAX_URL_LENGTH = 2048;

/** Hosts an app may use plain `http` with: the developer's own machine (RFC 8252 §7.3). */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);
}

export type UrlCheck = { ok: true; url: string } | { ok: false; message: string };

/**
 * The rules for a redirect URL at registration (RFC 9700 §2.1, §4.1): an absolute `https` URL (plain
 * `http` only on loopback), no fragment (RFC 6749 §3.1.2), no wildcard, no user info. It is stored in
 * canonical form, and authorization requests must then name it character for character: no pattern
 * or prefix matching, which is how open redirectors and code theft happen.
 */
export function checkRedirectUri(input: string): UrlCheck {
  const value = input.trim();
  if (!value) return { ok: false, message: 'Enter the redirect URL of your app.' };
  if (value.length > MAX_URL_LENGTH)
    return { ok: false, message: `The redirect URL must be at most ${MAX_URL_LENGTH} characters.` };
  if (value.includes('#')) return { ok: false, message: 'The redirect URL must not contain a fragment (#).' };
  if (value.includes('*'))
    return { ok: false, message: 'The redirect URL must not contain a wildcard (*): register the exact URL.' };
  const checked = checkWebUrl(value, 'redirect URL');
  if (!checked.ok) return checked;
  const url = new URL(checked.url);
  if (url.username || url.password)
    return { ok: false, message: 'The redirect URL must not contain a user name or password.' };
  return checked;
}

/** A picture shown on the consent page: `https`, or `http` on loopback for development. */
export function checkPictureUrl(input: string): UrlCheck {
  const value = input.trim();
  if (value.length > MAX_URL_LENGTH)
    return { ok: false, message: `The picture URL must be at most ${MAX_URL_LENGTH} characters.` };
  const checked = checkWebUrl(value, 'picture URL');
  if (!checked.ok) return checked;
  const url = new URL(checked.url);
  if (url.username || url.password)
    return { ok: false, message: 'The picture URL must not contain a user name or password.' };
  return checked;
}

function checkWebUrl(value: string, what: string): UrlCheck {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return {
      ok: false,
      message: `The ${what} must be an absolute URL, such as https://app.example.org/oauth/callback.`,
    };
  }
  if (url.protocol === 'https:') return { ok: true, url: url.href };
  if (url.protocol === 'http:') {
    if (isLoopbackHost(url.hostname)) return { ok: true, url: url.href };
    return { ok: false, message: `The ${what} must use https (http is accepted only for localhost and 127.0.0.1).` };
  }
  return { ok: false, message: `The ${what} must be an https URL; ${url.protocol} URLs are not accepted.` };
}

/**
 * Adds the outcome of an authorization to the redirect URL. The registered URL may carry a query of
 * its own, which is kept exactly as registered (RFC 6749 §3.1.2); `state` is percent-encoded so that
 * the client decodes exactly the bytes it sent.
 */
export function withQuery(redirectUri: string, params: Record<string, string | undefined>): string {
  const pairs = Object.entries(params)
    .filter((entry): entry is [string, string] => entry[1] !== undefined)
    .map(([name, value]) => `${name}=${encodeURIComponent(value)}`);
  return redirectUri + (redirectUri.includes('?') ? '&' : '?') + pairs.join('&');
}

/**
 * Whether a client id is the URL of a client ID metadata document: `https`, with a path, without
 * fragment, user info or dot segments (draft-ietf-oauth-client-id-metadata-document §3), at most 2048
 * characters, and already in canonical form (so one client has one id).
 */
export function isMetadataDocumentUrl(clientId: string): boolean {
  if (clientId.length > MAX_URL_LENGTH || !clientId.startsWith('https://')) return false;
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return false;
  }
  // The parser removes dot segments and would keep a fragment: neither is then the same text.
  return url.href === clientId && !url.hash && !url.username && !url.password && url.pathname !== '/';
}
