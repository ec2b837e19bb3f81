/** The statements the service sends for the benchmarked operations (see baseline-sql.mjs). */
export declare const BASELINE_SQL: {
  credential: string;
  organization: string;
  channels: string;
  quota: string;
  listPosts: string;
  getPost: string;
  listMedia: string;
  /** After authentication, the statements of a create of one scheduled post on each of `channels` channels. */
  createPost(channels: number): string[];
} & Record<string, unknown>;
