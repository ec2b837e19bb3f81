import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { AtpAgent, AtUri, XRPCError } from '@atproto/api';
import { TEST_PDS_DIR, testPdsStaleReason } from '../../scripts/test-pds.mjs';

/**
 * Bluesky's reference PDS with a PLC directory of its own (@atproto/dev-env's TestNetworkNoAppView), in the
 * test's process, each on a loopback port. Its accounts have handles under `.test` and did:plc DIDs whose
 * documents, in its PLC directory, name `url` as their PDS. Nothing else of the network is there: no
 * AppView, so no feeds, profiles or link cards; what a test reads back is the repository's records and
 * blobs.
 *
 * A `.test` handle resolves at the PDS only (`com.atproto.identity.resolveHandle`), never through DNS or
 * HTTPS at the handle's domain; a DID resolves through `plcUrl` (`GET {plcUrl}/{did}`), not plc.directory.
 * The PDS passes `app.bsky.*` reads on to an AppView it does not have (502 `UpstreamFailure`), and it
 * keeps blobs up to 5 MB in records without the lexicon's limits (an image of 1.2 MB is accepted): the
 * service's own checks are what a test of those limits sees.
 */
export interface TestPds {
  /** The PDS, as its accounts' DID documents name it: `http://localhost:<port>`. */
  url: string;
  /** The PLC directory the PDS registers its accounts' DIDs in: `http://localhost:<port>`. */
  plcUrl: string;
  /** A new account, with a handle of its own under `.test` and an app password (`appPasswordName`). */
  createAccount(): Promise<PdsAccount>;
  /** A new app password of the account, named `name`; its secret is returned. */
  createAppPassword(account: PdsAccount, name: string): Promise<string>;
  /**
   * Revokes the account's app password `name`, as its owner would in the app's settings: logging in with it
   * and refreshing its sessions are refused from then on. An access token issued before stays valid until it
   * expires (two hours): the PDS checks its signature, not the password.
   */
  revokeAppPassword(account: PdsAccount, name: string): Promise<void>;
  /** The record at `uri` (`at://<did>/<collection>/<rkey>`), as anyone reads it; undefined when there is none. */
  getRecord(uri: string): Promise<PdsRecord | undefined>;
  /** Every record of the account's `collection`, newest first. */
  listRecords(did: string, collection: string): Promise<PdsRecord[]>;
  /** The bytes of the account's blob `cid`, as stored. */
  getBlob(did: string, cid: string): Promise<Buffer>;
  close(): Promise<void>;
}

export interface PdsAccount {
  did: string;
  handle: string;
  email: string;
  /** The account's own password, which the service never gets. */
  password: string;
  /** The app password made with the account, named `appPasswordName`: what a person gives the service. */
  appPassword: string;
  appPasswordName: string;
}

export interface PdsRecord {
  uri: string;
  cid: string;
  value: Record<string, unknown>;
}

/**
 * The part of @atproto/dev-env used here. It is installed in test/pds, outside the project's own packages
 * (scripts/test-pds.mjs says why), so its types are not part of the type-check; the one call below is
 * checked by the test that starts it (test/bluesky-pds.test.ts).
 */
interface DevEnv {
  TestNetworkNoAppView: {
    create(params: { pds: Record<string, string> }): Promise<{
      pds: { url: string };
      plc: { url: string };
      close(): Promise<void>;
    }>;
  };
}

async function loadDevEnv(): Promise<DevEnv> {
  const stale = testPdsStaleReason();
  if (stale !== undefined)
    throw new Error(
      `The test PDS in test/pds cannot be used: ${stale}. \`node scripts/test-pds.mjs\` installs it ` +
        "(npm test and the tests' global setup do so by themselves).",
    );
  const entry = createRequire(path.join(TEST_PDS_DIR, 'package.json')).resolve('@atproto/dev-env');
  return (await import(pathToFileURL(entry).href)) as DevEnv;
}

/** Starts a PDS and its PLC directory, with their data in a temporary directory that `close()` removes. */
export async function startPds(): Promise<TestPds> {
  const devEnv = await loadDevEnv();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'test-pds-'));
  let network: Awaited<ReturnType<DevEnv['TestNetworkNoAppView']['create']>>;
  try {
    network = await devEnv.TestNetworkNoAppView.create({
      pds: {
        dataDirectory: dataDir,
        blobstoreDiskLocation: path.join(dataDir, 'blobs'),
        blobstoreDiskTmpLocation: path.join(dataDir, 'blobs-tmp'),
      },
    });
  } catch (error) {
    fs.rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  const url = network.pds.url;
  const reader = new AtpAgent({ service: url });

  const signIn = async (account: PdsAccount): Promise<AtpAgent> => {
    const agent = new AtpAgent({ service: url });
    await agent.login({ identifier: account.did, password: account.password });
    return agent;
  };

  return {
    url,
    plcUrl: network.plc.url,

    async createAccount() {
      // A handle's first label is 3 to 18 characters at this PDS.
      const name = `acct${randomBytes(5).toString('hex')}`;
      const email = `${name}@example.com`;
      const password = randomBytes(18).toString('base64url');
      const agent = new AtpAgent({ service: url });
      const { data } = await agent.createAccount({ handle: `${name}.test`, email, password });
      const appPasswordName = 'post-scheduler';
      const created = await agent.com.atproto.server.createAppPassword({ name: appPasswordName });
      return {
        did: data.did,
        handle: data.handle,
        email,
        password,
        appPassword: created.data.password,
        appPasswordName,
      };
    },

    async createAppPassword(account, name) {
      const agent = await signIn(account);
      return (await agent.com.atproto.server.createAppPassword({ name })).data.password;
    },

    async revokeAppPassword(account, name) {
      const agent = await signIn(account);
      await agent.com.atproto.server.revokeAppPassword({ name });
    },

    async getRecord(uri) {
      const at = new AtUri(uri);
      try {
        const { data } = await reader.com.atproto.repo.getRecord({
          repo: at.host,
          collection: at.collection,
          rkey: at.rkey,
        });
        return { uri: data.uri, cid: data.cid ?? '', value: data.value };
      } catch (error) {
        if (error instanceof XRPCError && error.error === 'RecordNotFound') return undefined;
        throw error;
      }
    },

    async listRecords(did, collection) {
      const records: PdsRecord[] = [];
      let cursor: string | undefined;
      do {
        const { data } = await reader.com.atproto.repo.listRecords({ repo: did, collection, limit: 100, cursor });
        records.push(...data.records);
        cursor = data.records.length > 0 ? data.cursor : undefined;
      } while (cursor);
      return records;
    },

    async getBlob(did, cid) {
      const { data } = await reader.com.atproto.sync.getBlob({ did, cid });
      return Buffer.from(data);
    },

    async close() {
      try {
        await network.close();
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}
