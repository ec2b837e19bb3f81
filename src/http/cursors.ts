import { createHmac, timingSafeEqual } from 'node:crypto';
import { ValidationError } from '../core/errors.js';

// 128 bits of HMAC-SHA-256: enough that a cursor cannot be forged, short enough for a URL.
const TAG_BYTES = 16;

/** The list a cursor pages, and what it was issued for: only the same list with the same binding reads it back. */
export interface CursorScope {
  /** The list, e.g. `posts`. */
  list: string;
  /** What the page depends on besides its position: the organization and the list's filters. */
  binding: unknown;
}

/**
 * The one codec of every paginated list's `nextCursor`: the position of the last item of a page,
 * signed with a key of the installation and bound to the list, the organization and the filters that
 * issued it. A cursor this API did not issue, or that was altered, or that comes from another list or
 * filters, is refused with 400 before anything is looked up; its content stays opaque to clients.
 */
export class CursorCodec {
  constructor(private readonly key: Buffer) {}

  encode(scope: CursorScope, position: object): string {
    const payload = Buffer.from(JSON.stringify(position)).toString('base64url');
    return `${payload}.${this.tag(scope, payload).toString('base64url')}`;
  }

  /**
   * The position a cursor names, as `read` accepts it (it checks the fields the list needs, such as an
   * instant the database can compare); 400 for anything else.
   */
  decode<T>(scope: CursorScope, cursor: string, read: (position: unknown) => T | undefined): T {
    const position = this.verified(scope, cursor);
    const value = position === undefined ? undefined : read(position);
    if (value === undefined) {
      throw new ValidationError(
        'The cursor is not one this list issued for these filters; ' +
          'pass the nextCursor of the previous page, or start again without a cursor.',
        [{ path: 'query.cursor', message: 'is not a cursor issued by this API for this list and these filters' }],
      );
    }
    return value;
  }

  /** The position of a cursor whose tag matches this scope, or `undefined`. */
  private verified(scope: CursorScope, cursor: string): unknown {
    const [payload, tag, ...rest] = cursor.split('.');
    if (!payload || !tag || rest.length > 0) return undefined;
    // Compared as text: base64 leaves spare bits in its last character, which decoding would ignore.
    const given = Buffer.from(tag);
    const expected = Buffer.from(this.tag(scope, payload).toString('base64url'));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    try {
      return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return undefined;
    }
  }

  private tag(scope: CursorScope, payload: string): Buffer {
    const signed = JSON.stringify([scope.list, scope.binding ?? null, payload]);
    return createHmac('sha256', this.key).update(signed).digest().subarray(0, TAG_BYTES);
  }
}
