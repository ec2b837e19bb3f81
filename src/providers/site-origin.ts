import net from 'node:net';

/**
 * The server a user named, as the origin every call goes to: a domain (`mastodon.social`) or a URL on
 * it. HTTPS only, but for a loopback host (a test server, as for return URLs); whether its address may
 * be reached at all is the outbound address policy's to say. `what` names the server in a problem
 * ("an instance"), `example` is a domain of one.
 */
export function siteOrigin(input: string, what: string, example: string): { origin: string } | { problem: string } {
  let text = input.trim();
  if (text === '') return { problem: `name ${what}, such as ${example}` };
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) text = `https://${text}`;
  const url = URL.parse(text);
  if (!url || !url.hostname || /\s/.test(text))
    return { problem: `${input.trim()} is not a domain, such as ${example}` };
  if (url.username || url.password) return { problem: `${what} is named without a user name or password` };
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const loopback = host === 'localhost' || (net.isIP(host) !== 0 && /^(127\.|::1$)/.test(host));
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback))
    return { problem: `${what} is reached over https` };
  return { origin: url.origin };
}
