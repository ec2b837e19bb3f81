import express from 'express';
import { describe, expect, it } from 'vitest';
import { SPEC_FILES } from '../src/http/spec.js';
import { mountOperations, type OperationHandler, type OperationHandlers } from '../src/http/typed-routes.js';

// These declarations are checked by `tsc --noEmit` (part of `npm test`): each @ts-expect-error line
// must stay an error, so a handler can never drift from the contract without the build failing.

const declared: OperationHandler<'listChannels'> = async () => ({ status: 200, body: { data: [] } });

// @ts-expect-error 201 is not a response listChannels declares
const undeclaredStatus: OperationHandler<'listChannels'> = async () => ({ status: 201, body: { data: [] } });

// @ts-expect-error the body must be the declared shape (`data`, not `channels`)
const wrongBody: OperationHandler<'listChannels'> = async () => ({ status: 200, body: { channels: [] } });

// @ts-expect-error the credential type is an enum of the contract
const wrongField: OperationHandler<'isConnected'> = async () => ({
  status: 200,
  body: {
    connected: true,
    organization: { id: 'org_1', name: 'Acme' },
    credential: { type: 'password' },
  },
});

// @ts-expect-error deletePost answers 204, which has no body
const bodyOnNoContent: OperationHandler<'deletePost'> = async () => ({ status: 204, body: { deleted: true } });

const noContent: OperationHandler<'deletePost'> = async ({ params }) => {
  const id: string = params.id;
  // @ts-expect-error path parameters are the contract's: getPost has `id`, not `postId`
  const missing: string = params.postId;
  void id;
  void missing;
  return { status: 204 };
};

void [declared, undeclaredStatus, wrongBody, wrongField, bodyOnNoContent, noContent];

describe('mountOperations', () => {
  it('refuses a handler for an operation the contract does not have', () => {
    const handlers = { notInTheSpec: async () => ({ status: 200 }) } as unknown as OperationHandlers;
    expect(() => mountOperations(express.Router(), SPEC_FILES.publicV1, handlers)).toThrow(/notInTheSpec.*not in/);
  });

  it('refuses to start with an operation of the contract left without a handler', () => {
    const handlers = { listChannels: declared } as unknown as OperationHandlers;
    expect(() => mountOperations(express.Router(), SPEC_FILES.publicV1, handlers)).toThrow(/has no handler/);
  });
});
