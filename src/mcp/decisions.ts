/**
 * Which operations of the Public API an agent calls through `/mcp`: every operation of
 * `openapi/public-v1.yaml` is decided here, as a tool or excluded with the reason. The tools are
 * generated from this list and the contract (`npm run gen`); an operation the contract gains without
 * a decision fails the generation and `test/mcp-tools.test.ts`.
 */
export type ToolDecision = { tool: true } | { excluded: string };

const tool = { tool: true } as const;

const WEBHOOKS_ARE_SETUP =
  "Webhook endpoints are an integration's server configuration, set up by a person or a deployment, " +
  'not something an agent schedules posts with.';

export const TOOL_DECISIONS: Readonly<Record<string, ToolDecision>> = {
  isConnected: tool,
  listChannels: tool,
  deleteChannel: {
    excluded:
      "Removing a channel revokes the account's tokens at its network and turns its waiting posts into " +
      'drafts: a decision for a person in Settings → Channels, not for an agent.',
  },
  // The agent hands the authorization URL to its user, who signs in on the network in a browser.
  connectChannel: tool,
  getQuota: tool,
  tiktokCreatorInfo: tool,
  tiktokAnalytics: tool,
  pinterestBoards: tool,
  createPost: tool,
  listPosts: tool,
  getPost: tool,
  updatePost: tool,
  deletePost: tool,
  getPostHistory: tool,
  schedulePost: tool,
  changePostStatus: tool,
  skipPost: tool,
  createSeries: tool,
  getSeries: tool,
  splitSeries: tool,
  endSeries: tool,
  // An agent acts with the role of the member who approved it: an editor's agent reviews as they may.
  approvePost: tool,
  rejectPost: tool,
  duplicatePost: tool,
  // Rows as JSON or a CSV file's text, with a dry run first: what an agent planning a week does.
  importPosts: tool,
  exportPosts: {
    excluded:
      "A file to download into a person's spreadsheet; an agent reads the same posts as JSON with listPosts, " +
      'page by page.',
  },
  getChannelSchedule: tool,
  replaceChannelSchedule: {
    excluded:
      "A channel's posting schedule is the organization's plan, set by an admin in Settings → Channels; " +
      'changing it moves every queued post of the channel.',
  },
  getChannelQueue: tool,
  queuePost: tool,
  listMedia: tool,
  uploadFromUrl: tool,
  createUpload: tool,
  completeUpload: tool,
  deleteMedia: tool,
  listWebhooks: { excluded: WEBHOOKS_ARE_SETUP },
  createWebhook: { excluded: WEBHOOKS_ARE_SETUP },
  getWebhook: { excluded: WEBHOOKS_ARE_SETUP },
  updateWebhook: { excluded: WEBHOOKS_ARE_SETUP },
  deleteWebhook: { excluded: WEBHOOKS_ARE_SETUP },
  testWebhook: { excluded: WEBHOOKS_ARE_SETUP },
  rotateWebhookSecret: { excluded: WEBHOOKS_ARE_SETUP },
  listWebhookDeliveries: { excluded: WEBHOOKS_ARE_SETUP },
  retryWebhookDelivery: { excluded: WEBHOOKS_ARE_SETUP },
};
