import { AtpAgent, XRPCError, type BlobRef } from '@atproto/api';
import { TID } from '@atproto/common-web';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { png } from './support/media-samples.js';
import { startPds, type TestPds } from './support/pds.js';

// The reference Bluesky PDS the Bluesky tests publish to (test/support/pds.ts), driven here as the service
// will drive it: through @atproto/api, with an app password, over loopback HTTP.
const POST = 'app.bsky.feed.post';
let pds: TestPds;

beforeAll(async () => {
  pds = await startPds();
});
afterAll(async () => {
  await pds?.close();
});

async function signIn(identifier: string, password: string): Promise<AtpAgent> {
  const agent = new AtpAgent({ service: pds.url });
  await agent.login({ identifier, password });
  return agent;
}

/** The error an XRPC call was refused with: its status and its error name. */
async function refusal(call: Promise<unknown>): Promise<{ status: number; error: string }> {
  const error: unknown = await call.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof XRPCError)) throw new Error(`expected an XRPC error, got ${String(error)}`);
  return { status: error.status, error: error.error };
}

describe('the reference Bluesky PDS of the tests', () => {
  it('resolves an account’s handle at the PDS, and its DID through its own PLC directory to the PDS', async () => {
    const account = await pds.createAccount();
    expect(account.handle).toMatch(/\.test$/);
    const resolved = await new AtpAgent({ service: pds.url }).com.atproto.identity.resolveHandle({
      handle: account.handle,
    });
    expect(resolved.data.did).toBe(account.did);

    const answer = await fetch(`${pds.plcUrl}/${account.did}`);
    expect(answer.status).toBe(200);
    const document = (await answer.json()) as {
      id: string;
      alsoKnownAs: string[];
      service: { id: string; type: string; serviceEndpoint: string }[];
    };
    expect(document.id).toBe(account.did);
    expect(document.alsoKnownAs).toEqual([`at://${account.handle}`]);
    expect(document.service).toContainEqual({
      id: '#atproto_pds',
      type: 'AtprotoPersonalDataServer',
      serviceEndpoint: pds.url,
    });
  });

  it('keeps a post with an image under the record key chosen before it was sent, once', async () => {
    const account = await pds.createAccount();
    const agent = await signIn(account.handle, account.appPassword);
    expect(agent.session?.did).toBe(account.did);

    const image = png(4, 3, [200, 30, 30, 255]);
    const uploaded = await agent.uploadBlob(image, { encoding: 'image/png' });
    const rkey = TID.nextStr();
    const record = {
      $type: POST,
      text: 'Hello from the scheduler',
      createdAt: new Date().toISOString(),
      langs: ['en'],
      embed: {
        $type: 'app.bsky.embed.images',
        images: [{ image: uploaded.data.blob, alt: 'A red rectangle', aspectRatio: { width: 4, height: 3 } }],
      },
    };
    const created = await agent.com.atproto.repo.createRecord({ repo: account.did, collection: POST, rkey, record });
    expect(created.data.uri).toBe(`at://${account.did}/${POST}/${rkey}`);

    const stored = await pds.getRecord(created.data.uri);
    expect(stored?.cid).toBe(created.data.cid);
    expect(stored?.value).toMatchObject({ text: 'Hello from the scheduler', langs: ['en'] });
    const blobCid = uploaded.data.blob.ref.toString();
    const embed = stored?.value.embed as { images: { alt: string; image: BlobRef }[] };
    expect(embed.images.map(({ alt, image }) => [alt, image.ref.toString(), image.mimeType])).toEqual([
      ['A red rectangle', blobCid, 'image/png'],
    ]);
    expect(await pds.getBlob(account.did, blobCid)).toEqual(image);

    // A retry after a lost answer. Creating under the same key again is refused, but not by name (this PDS
    // answers 500, its database's unique key), so it proves nothing; a put with `swapRecord: null` ("only
    // where there is none") does: the same record again changes nothing, another one is refused.
    const createdAgain = await refusal(
      agent.com.atproto.repo.createRecord({ repo: account.did, collection: POST, rkey, record }),
    );
    expect(createdAgain.status).toBeGreaterThanOrEqual(400);
    const putAgain = await agent.com.atproto.repo.putRecord({
      repo: account.did,
      collection: POST,
      rkey,
      record,
      swapRecord: null,
    });
    expect(putAgain.data.cid).toBe(created.data.cid);
    expect(
      await refusal(
        agent.com.atproto.repo.putRecord({
          repo: account.did,
          collection: POST,
          rkey,
          record: { ...record, text: 'Another text' },
          swapRecord: null,
        }),
      ),
    ).toEqual({ status: 400, error: 'InvalidSwap' });
    expect((await pds.getRecord(created.data.uri))?.value.text).toBe('Hello from the scheduler');
    expect((await pds.listRecords(account.did, POST)).map((post) => post.uri)).toEqual([created.data.uri]);
    expect(await pds.getRecord(`at://${account.did}/${POST}/${TID.nextStr()}`)).toBeUndefined();
  });

  it('refuses a revoked app password a new session and a refreshed one, and keeps the account’s others', async () => {
    const account = await pds.createAccount();
    const other = await pds.createAppPassword(account, 'another-app');
    const agent = await signIn(account.handle, account.appPassword);
    const refreshJwt = agent.session?.refreshJwt ?? '';

    await pds.revokeAppPassword(account, account.appPasswordName);

    expect(await refusal(signIn(account.handle, account.appPassword))).toEqual({
      status: 401,
      error: 'AuthenticationRequired',
    });
    expect(
      await refusal(
        new AtpAgent({ service: pds.url }).com.atproto.server.refreshSession(undefined, {
          headers: { authorization: `Bearer ${refreshJwt}` },
        }),
      ),
    ).toEqual({ status: 400, error: 'ExpiredToken' });
    // The access token issued before the revocation is a signed token the PDS does not look up: it works
    // until it expires.
    expect((await agent.com.atproto.server.getSession()).data.did).toBe(account.did);
    expect((await signIn(account.did, other)).session?.handle).toBe(account.handle);
  });
});
