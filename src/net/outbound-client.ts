import { AddressPolicy } from './address-policy.js';
import { explainFetchFailure, openRemote, type RemoteResponse, type Resolver } from './remote-fetch.js';

export interface OutboundLimits {
  /** Also connect to loopback, private, link-local and unique-local addresses (tests, closed networks). */
  allowPrivateAddresses: boolean;
  /** Addresses or CIDR ranges connected to even though they are not public. */
  allowedRanges: readonly string[];
  /** Longest silence from the server: connecting, before the headers, between body chunks. */
  idleTimeoutSeconds: number;
  /** Longest a whole exchange may take. */
  maxDurationSeconds: number;
}

/** Redirects followed (each checked like the first URL) before a URL is given up on. */
export const MAX_REDIRECTS = 5;

/**
 * The one way this server sends a request to a URL someone gave it (media to download, an app's
 * picture): addresses are checked after resolution and on every redirect, the connection goes to the
 * checked address, and silence and the whole exchange are timed. A failure that is the remote side's
 * (refused address, unreachable, too slow, broken HTTP or TLS) becomes a 422 naming the URL.
 */
export class OutboundClient {
  private readonly addresses: AddressPolicy;

  constructor(
    private readonly limits: OutboundLimits,
    /** Host name to addresses; the system resolver by default (tests give their own). */
    private readonly resolve?: Resolver,
  ) {
    this.addresses = new AddressPolicy({ allowPrivate: limits.allowPrivateAddresses, allowedRanges: limits.allowedRanges });
  }

  /**
   * GETs `url` and hands the response to `use`, within the time limits (`maxDurationSeconds` may
   * shorten the configured one); the response is closed when `use` settles.
   */
  async get<T>(url: string, use: (response: RemoteResponse) => Promise<T>, options: { maxDurationSeconds?: number } = {}): Promise<T> {
    const { idleTimeoutSeconds } = this.limits;
    const maxDurationSeconds = Math.min(options.maxDurationSeconds ?? Infinity, this.limits.maxDurationSeconds);
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), maxDurationSeconds * 1000);
    let remote: RemoteResponse | undefined;
    try {
      remote = await openRemote(url, {
        policy: this.addresses,
        idleTimeoutMs: idleTimeoutSeconds * 1000,
        maxRedirects: MAX_REDIRECTS,
        signal: deadline.signal,
        ...(this.resolve ? { resolve: this.resolve } : {}),
      });
      return await use(remote);
    } catch (error) {
      throw explainFetchFailure(error, { timedOut: deadline.signal.aborted, idleTimeoutSeconds, maxDurationSeconds });
    } finally {
      clearTimeout(timer);
      remote?.body.destroy();
    }
  }
}

/**
 * The whole body, or `undefined` as soon as it is longer than `maxBytes` (announced or received): an
 * oversized body is cut off, never read to its end.
 */
export async function readBody(response: RemoteResponse, maxBytes: number): Promise<Buffer | undefined> {
  if (response.contentLength !== undefined && response.contentLength > maxBytes) return undefined;
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of response.body) {
    received += (chunk as Buffer).length;
    if (received > maxBytes) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
