import type { ProviderFactory } from '../provider-adapter.js';
import { SandboxAdapter } from './adapter.js';

/**
 * The built-in sandbox network: it publishes to a page of this server (the sandbox network, at the
 * configured SANDBOX_NETWORK_URL), takes any post, and needs no account or app.
 */
export const sandboxNetwork: ProviderFactory<'sandbox'> = ({ config, outbound, sandboxKey, clock }) => ({
  provider: 'sandbox',
  name: 'sandbox',
  connectsAccounts: false,
  needsSettings: false,
  settingsProblems: () => Promise.resolve([]),
  withDefaults: (settings) => ({
    ...settings,
    outcome: settings.outcome ?? 'published',
    failingPart: settings.failingPart ?? 1,
  }),
  // Replies to its own posts, like the text networks; its parts follow no rule besides the contract's.
  thread: { maxParts: 10, partProblems: () => [] },
  // Shown as the images' alt on its pages.
  altTextMax: 2000,
  // Its pages show a post's comments, a first comment among them.
  firstComment: { maxLength: 8000 },
  // Read at each publication: a test server learns its own address only once it listens.
  publishing: new SandboxAdapter(outbound, () => config.sandbox.networkUrl, sandboxKey, config.sandbox.limits, clock),
});
