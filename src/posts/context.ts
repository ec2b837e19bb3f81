import type { JobQueue } from '../jobs/queue.js';
import type { ProvidersContext } from '../providers/registry.js';

/** What the posts feature is built from: the providers' adapters and the job queue. */
export interface PostsContext extends ProvidersContext {
  queue: JobQueue;
}
