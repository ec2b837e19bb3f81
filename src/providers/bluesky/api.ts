import type { IncomingHttpHeaders } from 'node:http';
import { UnprocessableError } from '../../core/errors.js';
import type { OutboundClient } from '../../net/outbound-client.js';

const TIMEOUT_SECONDS = 60;
/** A blob goes up in one request: an image of up to 1 MB, a video of up to 100 MB. */
const UPLOAD_TIMEOUT_SECONDS = 300;
const MAX_ANSWER_BYTES = 256 * 1024;

/** A session at a PDS: the tokens of `com.atproto.server.createSession` and where the account's repository is. */
export interface BlueskySession {
  accessJwt: string;
  refreshJwt: string;
  did: string;
  handle: string;
  /** The account's PDS, from its DID document (the server signed in to when the document names none). */
  pds: string;
  /** `takendown`, `suspended`, `deactivated` when the account cannot post. */
  status?: string;
}

/** A blob as a record refers to it (the lexicon's `blob` type, as JSON). */
export interface BlobReference {
  $type: 'blob';
  ref: { $link: string };
  mimeType: string;
  size: number;
}

/** The PDS answered an XRPC call with an error (its `error` name and `message`, as the XRPC spec has them). */
export class XrpcError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
    readonly headers: IncomingHttpHeaders,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** The server could not be reached (refused, reset, timed out, its name not resolved): nothing was answered. */
export class PdsUnreachableError extends Error {}

/** The PDS's address is one this server's outbound policy refuses (loopback, private, metadata …). */
export class PdsAddressRefusedError extends Error {}

/**
 * The XRPC calls the Bluesky adapter makes (https://atproto.com/specs/xrpc), sent through the outbound
 * client: a PDS is a server the user named, so the address policy applies to every call, as to any URL a
 * user gives. Queries are GETs with parameters, procedures POSTs with a JSON (or blob) body; an error is
 * answered with a status and a JSON body `{ error, message }`.
 */
export class BlueskyApi {
  constructor(private readonly outbound: OutboundClient) {}

  createSession(service: string, identifier: string, password: string, signal?: AbortSignal): Promise<BlueskySession> {
    return this.procedure(service, 'com.atproto.server.createSession', { identifier, password }, { signal }).then(
      (answer) => session(answer, service),
    );
  }

  refreshSession(pds: string, refreshJwt: string, signal?: AbortSignal): Promise<BlueskySession> {
    return this.procedure(pds, 'com.atproto.server.refreshSession', undefined, { token: refreshJwt, signal }).then(
      (answer) => session(answer, pds),
    );
  }

  /** The DID a handle names, as the PDS resolves it; `undefined` when it names none. */
  async resolveHandle(pds: string, handle: string, signal?: AbortSignal): Promise<string | undefined> {
    try {
      const answer = await this.query(pds, 'com.atproto.identity.resolveHandle', { handle }, { signal });
      return typeof answer.did === 'string' ? answer.did : undefined;
    } catch (error) {
      if (error instanceof XrpcError && error.status === 400) return undefined;
      throw error;
    }
  }

  /**
   * The PDS a DID's document names: a `did:plc` document read at the PLC directory, a `did:web` one at
   * `https://{host}/.well-known/did.json`; `undefined` when there is no such DID or it names no PDS.
   */
  async pdsOfDid(plcUrl: string, did: string, signal?: AbortSignal): Promise<string | undefined> {
    const webHost = /^did:web:([^:]+)$/.exec(did)?.[1];
    const url = did.startsWith('did:plc:')
      ? `${plcUrl.replace(/\/+$/, '')}/${encodeURIComponent(did)}`
      : webHost
        ? `https://${decodeURIComponent(webHost)}/.well-known/did.json`
        : undefined;
    if (!url) return undefined;
    let answer;
    try {
      answer = await this.outbound.call(url, {
        method: 'GET',
        headers: { Accept: 'application/did+ld+json, application/json' },
        trusted: false,
        ...(signal ? { signal } : {}),
        timeoutSeconds: TIMEOUT_SECONDS,
        maxResponseBytes: MAX_ANSWER_BYTES,
      });
    } catch (error) {
      if (error instanceof Error && error.name === 'AbortError' && signal?.aborted) throw error;
      throw unreachable(url, error);
    }
    if (answer.status === 404 || answer.status === 410) return undefined;
    if (answer.status < 200 || answer.status >= 300)
      throw new XrpcError(
        answer.status,
        `HTTP ${answer.status}`,
        `the DID document of ${did} could not be read`,
        answer.headers,
      );
    try {
      return pdsOf(JSON.parse(answer.body.toString('utf8')));
    } catch {
      return undefined;
    }
  }

  async uploadBlob(
    session: BlueskySession,
    bytes: Buffer,
    contentType: string,
    signal?: AbortSignal,
  ): Promise<BlobReference> {
    const answer = await this.send(session.pds, 'com.atproto.repo.uploadBlob', {
      method: 'POST',
      headers: { Authorization: `Bearer ${session.accessJwt}`, 'Content-Type': contentType },
      body: bytes,
      signal,
      timeoutSeconds: UPLOAD_TIMEOUT_SECONDS,
    });
    return answer.blob as BlobReference;
  }

  /**
   * Writes `record` at `rkey` only where there is no record yet (`swapRecord: null`): the same record
   * again changes nothing and answers the same cid, another one is refused with `InvalidSwap`.
   */
  async putNewRecord(
    session: BlueskySession,
    collection: string,
    rkey: string,
    record: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<{ uri: string; cid: string }> {
    const answer = await this.procedure(
      session.pds,
      'com.atproto.repo.putRecord',
      { repo: session.did, collection, rkey, record, swapRecord: null },
      { token: session.accessJwt, signal },
    );
    return { uri: String(answer.uri), cid: String(answer.cid) };
  }

  /** The record at `rkey`, as anyone reads it; `undefined` when there is none. */
  async getRecord(
    pds: string,
    repo: string,
    collection: string,
    rkey: string,
    signal?: AbortSignal,
  ): Promise<{ uri: string; cid: string; value: Record<string, unknown> } | undefined> {
    try {
      const answer = await this.query(pds, 'com.atproto.repo.getRecord', { repo, collection, rkey }, { signal });
      return {
        uri: String(answer.uri),
        cid: String(answer.cid),
        value: (answer.value ?? {}) as Record<string, unknown>,
      };
    } catch (error) {
      if (error instanceof XrpcError && error.error === 'RecordNotFound') return undefined;
      throw error;
    }
  }

  private query(
    server: string,
    method: string,
    parameters: Record<string, string>,
    options: { signal?: AbortSignal | undefined },
  ): Promise<Record<string, unknown>> {
    const search = new URLSearchParams(parameters).toString();
    return this.send(server, `${method}?${search}`, { method: 'GET', headers: {}, signal: options.signal });
  }

  private procedure(
    server: string,
    method: string,
    body: unknown,
    options: { token?: string; signal?: AbortSignal | undefined },
  ): Promise<Record<string, unknown>> {
    const headers: Record<string, string> = options.token ? { Authorization: `Bearer ${options.token}` } : {};
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    return this.send(server, method, {
      method: 'POST',
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: options.signal,
    });
  }

  private async send(
    server: string,
    path: string,
    request: {
      method: string;
      headers: Record<string, string>;
      body?: Buffer | string;
      signal: AbortSignal | undefined;
      timeoutSeconds?: number;
    },
  ): Promise<Record<string, unknown>> {
    const url = `${server.replace(/\/+$/, '')}/xrpc/${path}`;
    let answer;
    try {
      answer = await this.outbound.call(url, {
        method: request.method,
        headers: { Accept: 'application/json', ...request.headers },
        ...(request.body !== undefined ? { body: request.body } : {}),
        trusted: false,
        ...(request.signal ? { signal: request.signal } : {}),
        timeoutSeconds: request.timeoutSeconds ?? TIMEOUT_SECONDS,
        maxResponseBytes: MAX_ANSWER_BYTES,
      });
    } catch (error) {
      if (error instanceof Error && error.name === 'AbortError' && request.signal?.aborted) throw error;
      throw unreachable(server, error);
    }
    let parsed: Record<string, unknown> = {};
    try {
      parsed = JSON.parse(answer.body.toString('utf8')) as Record<string, unknown>;
    } catch {
      // Not JSON (a proxy's error page): the status says it.
    }
    if (answer.status >= 200 && answer.status < 300) return parsed;
    const name = typeof parsed.error === 'string' ? parsed.error : `HTTP ${answer.status}`;
    const message = typeof parsed.message === 'string' ? parsed.message : name;
    throw new XrpcError(answer.status, name, message, answer.headers);
  }
}

function session(answer: Record<string, unknown>, server: string): BlueskySession {
  if (typeof answer.accessJwt !== 'string' || typeof answer.did !== 'string')
    throw new XrpcError(502, 'InvalidResponse', 'the PDS answered a session without tokens', {});
  return {
    accessJwt: answer.accessJwt,
    refreshJwt: String(answer.refreshJwt),
    did: answer.did,
    handle: String(answer.handle),
    pds: pdsOf(answer.didDoc) ?? server.replace(/\/+$/, ''),
    ...(typeof answer.status === 'string' ? { status: answer.status } : {}),
  };
}

/**
 * The PDS a DID document names (its `#atproto_pds` service): the server an account signed in to may be an
 * entryway (bsky.social) in front of the PDS that holds the repository.
 */
function pdsOf(didDoc: unknown): string | undefined {
  const services = (didDoc as { service?: unknown } | undefined)?.service;
  if (!Array.isArray(services)) return undefined;
  for (const service of services as { id?: unknown; serviceEndpoint?: unknown }[]) {
    if (
      typeof service.id === 'string' &&
      service.id.endsWith('#atproto_pds') &&
      typeof service.serviceEndpoint === 'string'
    )
      return service.serviceEndpoint.replace(/\/+$/, '');
  }
  return undefined;
}

/** Why a call got no answer: the address refused by the policy, or the server not reached. */
function unreachable(server: string, error: unknown): Error {
  const origin = safeOrigin(server);
  if (error instanceof UnprocessableError) {
    const reason = error.details?.[0]?.message ?? error.message;
    // A name that does not resolve may resolve later; an address the policy refuses never will.
    if (!/could not be resolved/.test(reason))
      return new PdsAddressRefusedError(`this server does not connect to the PDS at ${origin}: ${reason}`);
    return new PdsUnreachableError(`the PDS at ${origin} could not be reached (${reason})`);
  }
  const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
  return new PdsUnreachableError(`the PDS at ${origin} could not be reached (${code})`);
}

function safeOrigin(server: string): string {
  try {
    return new URL(server).origin;
  } catch {
    return server;
  }
}
