import type { Request, RequestHandler } from 'express';
import { ValidationError, type ErrorDetail } from '../core/errors.js';

// PostgreSQL's text and jsonb cannot hold U+0000, and a lone UTF-16 surrogate has no UTF-8 form (it
// would be stored as U+FFFD): either would fail the write or silently change what the client sent.
const NUL = '\u0000';
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const PROTOTYPE_NAMES = new Set(Object.getOwnPropertyNames(Object.prototype));

// As in the validator's answers: the first few problems; fixing them reveals the rest.
const MAX_DETAILS = 20;

function problemOf(text: string): string | undefined {
  if (text.includes(NUL)) return 'must not contain the NUL character (U+0000)';
  if (LONE_SURROGATE.test(text)) return 'must be well-formed Unicode (it contains a lone surrogate)';
  return undefined;
}

/** Whether the database stores this text exactly as it is. */
export function isStorableText(text: string): boolean {
  return problemOf(text) === undefined;
}

/**
 * Every string (and object key) of a value that cannot be stored as sent, with its dotted path. Walks
 * with a stack of its own: a body nested a hundred thousand levels deep must not overflow the call stack.
 */
export function unstorableText(value: unknown, path: string): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  const pending: [unknown, string][] = [[value, path]];
  while (pending.length > 0 && details.length < MAX_DETAILS) {
    const [node, at] = pending.pop()!;
    if (typeof node === 'string') {
      const message = problemOf(node);
      if (message) details.push({ path: at || 'body', message });
    } else if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) pending.push([node[i], `${at}[${i}]`]);
    } else if (node && typeof node === 'object') {
      for (const [key, item] of Object.entries(node).reverse()) {
        const child = at ? `${at}.${key}` : key;
        const message = problemOf(key);
        if (message) details.push({ path: child, message: `its name ${message}` });
        // No schema declares a property named like a member of Object.prototype (`__proto__`,
        // `constructor`, …), but a union's unevaluated-property check lets one through (Ajv notes the
        // properties it saw in a plain object, where those names are always "seen"): refused here.
        else if (PROTOTYPE_NAMES.has(key))
          details.push({ path: child, message: 'must NOT have additional properties' });
        else pending.push([item, child]);
      }
    }
  }
  return details;
}

/**
 * Refuses (400) path parameters, query parameters and body strings that the database cannot store
 * as sent. Runs after the contract validator, which has decoded the path parameters.
 */
export function refuseUnstorableText(): RequestHandler {
  return (req, _res, next) => {
    const pathParams = (req as { openapi?: { pathParams?: Record<string, string> } }).openapi?.pathParams ?? {};
    const details = [
      ...Object.entries(pathParams).flatMap(([name, value]) => unstorableText(value, `params.${name}`)),
      ...Object.entries(req.query).flatMap(([name, value]) => unstorableText(value, `query.${name}`)),
      ...unstorableText(req.body, ''),
    ];
    if (details.length > 0)
      throw new ValidationError('The request contains text that cannot be stored.', details.slice(0, MAX_DETAILS));
    next();
  };
}

/**
 * Whether every escape of a URL decodes to text the database stores. Node's HTTP parser refuses a raw
 * NUL, but `%00` decodes to one in a parameter; a malformed escape (`%ff`, which is no UTF-8, a lone
 * surrogate's `%ED%A0%80`, a bare `%`) has no text at all: Express's router fails on it with a
 * `URIError`, and its query parser quietly turns it into U+FFFD.
 */
export function isReadableUrl(url: string): boolean {
  try {
    return isStorableText(decodeURIComponent(url));
  } catch {
    return false;
  }
}

/**
 * Where a request carries text that cannot be stored: `url` for its path or query string, else the
 * first body field's path. For the surfaces that answer bad input without field details (the OAuth
 * endpoints, the web pages, the sandbox network); they run it before anything looks a value up.
 */
export function findUnstorableText(req: Request): string | undefined {
  if (!isReadableUrl(req.originalUrl)) return 'url';
  const [first] = [
    ...Object.entries(req.query).flatMap(([name, value]) => unstorableText(value, `query.${name}`)),
    ...unstorableText(req.body, ''),
  ];
  return first?.path;
}

/** Refuses a request that carries text the database cannot store, with the error its surface answers bad input with. */
export function refuseUnstorableRequestText(refusal: (where: string) => Error): RequestHandler {
  return (req, _res, next) => {
    const where = findUnstorableText(req);
    next(where === undefined ? undefined : refusal(where));
  };
}
