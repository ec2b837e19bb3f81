import type { Post } from '../posts/tables.js';

/**
 * The parts a post publishes, in order: its own content (0), its thread's parts (1 …), and its first
 * comment after them, if it has one.
 */
type Parted = Pick<Post, 'thread' | 'first_comment'>;

/** How many parts the post publishes: its own, its thread's, and its first comment. */
export function partsOf(post: Parted): number {
  return post.thread.length + 1 + (post.first_comment ? 1 : 0);
}

/** Whether part `part` of the post is its first comment (the part after its thread). */
export function isComment(post: Parted, part: number): boolean {
  return post.first_comment !== null && part === post.thread.length + 1;
}
