import express from 'express';
import { describe, expect, it } from 'vitest';
import { SPEC_FILES } from '../src/core/contract.js';
import {
  mountOperations,
  type OAuthHandler,
  type PublicHandler,
  type PublicHandlers,
} from '../src/http/typed-routes.js';

// These declarations are checked by `tsc --noEmit` (part of `npm test`): each @ts-expect-error line
// must stay an error, so a handler can never drift from the contract without the build failing.

// --- The Public API (openapi/public-v1.yaml) ------------------------------------------------------

const declared: PublicHandler<'listChannels'> = () => Promise.resolve({ status: 200, body: { data: [] } });

// @ts-expect-error 201 is not a response listChannels declares
const undeclaredStatus: PublicHandler<'listChannels'> = () => Promise.resolve({ status: 201, body: { data: [] } });

// @ts-expect-error the body must be the declared shape (`data`, not `channels`)
const wrongBody: PublicHandler<'listChannels'> = () => Promise.resolve({ status: 200, body: { channels: [] } });

const wrongField: PublicHandler<'isConnected'> = () =>
  // @ts-expect-error the credential type is an enum of the contract
  Promise.resolve({
    status: 200,
    body: {
      connected: true,
      organization: { id: 'org_1', name: 'Acme' },
      credential: { type: 'password' },
    },
  });

// @ts-expect-error deletePost answers 204, which has no body
const bodyOnNoContent: PublicHandler<'deletePost'> = () => Promise.resolve({ status: 204, body: { deleted: true } });

const noContent: PublicHandler<'deletePost'> = ({ params }) => {
  const id: string = params.id;
  void id;
  // @ts-expect-error path parameters are the contract's: getPost has `id`, not `postId`
  void params.postId;
  return Promise.resolve({ status: 204 });
};

// --- The OAuth API (openapi/oauth.yaml) ---------------------------------------------------------

const token: OAuthHandler<'token'> = ({ body }) =>
  Promise.resolve({
    status: 200,
    body: { id: 'org_1', cus: null, access_token: `pos_${body.code ?? ''}`, token_type: 'bearer' },
  });

const wrongToken: OAuthHandler<'token'> = () =>
  // @ts-expect-error the token response has no `refresh_token`, and `token_type` is `bearer`
  Promise.resolve({
    status: 200,
    body: { id: 'org_1', cus: null, access_token: 'pos_x', token_type: 'mac', refresh_token: 'r' },
  });

const createdToken: OAuthHandler<'token'> = () =>
  // @ts-expect-error 201 is not a response the token endpoint declares
  Promise.resolve({
    status: 201,
    body: { id: 'org_1', cus: null, access_token: 'pos_x', token_type: 'bearer' },
  });

// @ts-expect-error revocation answers 200 with an empty body
const revokeWithBody: OAuthHandler<'revoke'> = () => Promise.resolve({ status: 200, body: { revoked: true } });

// @ts-expect-error the authorize endpoint answers pages (`html`), not JSON
const authorizeJson: OAuthHandler<'authorize'> = () => Promise.resolve({ status: 200, body: { consent: true } });

const thinMetadata: OAuthHandler<'authorizationServerMetadata'> = () =>
  // @ts-expect-error the metadata must name its issuer and endpoints
  Promise.resolve({
    status: 200,
    body: { issuer: 'https://x.example' },
  });

void [declared, undeclaredStatus, wrongBody, wrongField, bodyOnNoContent, noContent];
void [token, wrongToken, createdToken, revokeWithBody, authorizeJson, thinMetadata];

describe('mountOperations', () => {
  const noExtra = () => ({});

  it('refuses a handler for an operation the contract does not have', () => {
    const handlers = { notInTheSpec: () => Promise.resolve({ status: 200 }) };
    expect(() => mountOperations(express.Router(), SPEC_FILES.publicV1, handlers, noExtra)).toThrow(
      /notInTheSpec.*not in/,
    );
  });

  it('refuses to start with an operation of the contract left without a handler', () => {
    const handlers: Partial<PublicHandlers> = { listChannels: declared };
    expect(() => mountOperations(express.Router(), SPEC_FILES.publicV1, handlers, noExtra)).toThrow(/has no handler/);
  });

  it('mounts the OAuth contract by operationId too', () => {
    const handlers = {
      token,
      revoke: () => Promise.resolve({ status: 200 }),
      authorize: () => Promise.resolve({ status: 302 }),
      register: () => Promise.resolve({ status: 201 }),
    };
    expect(() => mountOperations(express.Router(), SPEC_FILES.oauth, handlers, noExtra)).toThrow(
      /authorizationServerMetadata.*has no handler/,
    );
  });
});
