import { AccountTokens } from '../account-tokens.js';
import { GraphApi } from '../meta/graph.js';
import { mediaUnreachableReason } from '../meta/media-reach.js';
import type { ProviderFactory } from '../provider-adapter.js';
import { ThreadsAdapter } from './adapter.js';
import { ThreadsConnection } from './connection.js';
import {
  THREADS_ALT_TEXT_MAX,
  THREADS_CONTENT_LIMIT,
  THREADS_MAX_PARTS,
  threadsDefaults,
  threadsPostProblems,
  threadsProblems,
} from './rules.js';

/**
 * Threads (the Threads API). Its rules hold on every server; connecting accounts and publishing need the
 * operator's Threads app (THREADS_APP_ID and THREADS_APP_SECRET).
 */
export const threadsNetwork: ProviderFactory<'threads'> = ({ config, outbound, clock, db, keyring, metrics }) => {
  const rules = {
    provider: 'threads',
    name: 'Threads',
    // Its accounts connect through the operator's Threads app: without one, the page says it is not configured.
    connectsAccounts: true,
    needsSettings: false,
    contentLimit: THREADS_CONTENT_LIMIT,
    altTextMax: THREADS_ALT_TEXT_MAX,
    thread: {
      maxParts: THREADS_MAX_PARTS,
      partProblems: (part) => threadsPostProblems(part, mediaUnreachableReason(config)),
    },
    settingsProblems: (check) => threadsProblems(check, mediaUnreachableReason(config)),
    withDefaults: threadsDefaults,
  } satisfies ReturnType<ProviderFactory<'threads'>> as ReturnType<ProviderFactory<'threads'>>;
  if (!config.threads) return rules;
  const graph = new GraphApi(
    { network: 'Threads', url: config.threads.graphUrl, version: config.threads.graphVersion },
    outbound,
  );
  const connection = new ThreadsConnection(config.threads, graph, clock);
  const tokens = new AccountTokens(db, keyring, connection, clock, metrics);
  return { ...rules, connection, publishing: new ThreadsAdapter(graph, tokens, clock) };
};
