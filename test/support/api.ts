import createClient, { type Client } from 'openapi-fetch';
import { expect } from 'vitest';
import type { components as OAuthComponents, paths as OAuthPaths } from '../../generated/oauth.js';
import type { components, operations, paths } from '../../generated/public-v1.js';

/** The Public API's schemas, as the contract declares them. */
export type Schemas = components['schemas'];
/** The JSON body of a Public API operation's request, by operationId: `RequestBody<'createPost'>`. */
export type RequestBody<Operation extends keyof operations> = operations[Operation] extends {
  requestBody?: { content: { 'application/json': infer Body } };
}
  ? Body
  : never;
/** The documented error envelope of the Public API and of the pages' JSON answers. */
export type ApiError = Schemas['Error'];
/** The OAuth API's schemas, as its contract declares them. */
export type OAuthSchemas = OAuthComponents['schemas'];
/** An OAuth endpoint's error (RFC 6749 §5.2). */
export type OAuthError = OAuthSchemas['OAuthError'];

type Origin = { baseUrl: string };

/**
 * A typed client of the Public API on the test server, as the organization (`auth`) or anonymous:
 * each request and its answer are checked against the contract's types, so a test reads the body it
 * asserts through the contract's names. A test that must send what the types forbid (a wrong field,
 * a broken body) uses `send` and reads the refusal with `errorOf`.
 */
export function publicApi(server: Origin, auth?: { Authorization: string }): Client<paths> {
  return createClient<paths>({ baseUrl: server.baseUrl, ...(auth ? { headers: auth } : {}) });
}

/** A typed client of the OAuth endpoints (`/api/oauth/token`, `/api/oauth/revoke`, the server metadata). */
export function oauthApi(server: Origin, headers?: Record<string, string>): Client<OAuthPaths> {
  return createClient<OAuthPaths>({ baseUrl: server.baseUrl, ...(headers ? { headers } : {}) });
}

/** The error envelope of a refused Public API request; fails the test when the body is not one. */
export async function errorOf(response: Response): Promise<ApiError['error']> {
  const body = (await response.json()) as Partial<ApiError> | null;
  if (!body || typeof body.error !== 'object' || typeof body.error.code !== 'string') {
    throw new Error(`expected the error envelope, got ${response.status} ${JSON.stringify(body)}`);
  }
  return body.error;
}

/** The RFC 6749 error of a refused OAuth request; fails the test when the body is not one. */
export async function oauthErrorOf(response: Response): Promise<OAuthError> {
  const body = (await response.json()) as Partial<OAuthError> | null;
  if (!body || typeof body.error !== 'string') {
    throw new Error(`expected an OAuth error, got ${response.status} ${JSON.stringify(body)}`);
  }
  return body as OAuthError;
}

/**
 * The JSON body of an answer the test names the type of: for routes outside the contracts (the
 * sandbox network, the web pages' JSON) and for answers to requests sent with `send`.
 */
export async function bodyOf<T>(response: Response): Promise<T> {
  return (await response.json()) as T;
}

/**
 * The body of an answer of a typed client that the test expects to succeed with `status`: any other
 * answer fails the test with its status and error.
 */
export async function dataOf<T>(
  request: Promise<{ data?: T; error?: unknown; response: Response }>,
  status: number,
): Promise<T> {
  const { data, error, response } = await request;
  expect(response.status, `${response.url}: ${JSON.stringify(error)}`).toBe(status);
  return data as T;
}
