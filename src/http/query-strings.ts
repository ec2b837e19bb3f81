import type { RequestHandler } from 'express';
import { readSpec } from '../core/contract.js';
import { ValidationError, type ErrorDetail } from '../core/errors.js';

/** What the contract says of a query parameter, wherever it is declared. */
interface QueryParameter {
  array: boolean;
  integer: boolean;
}

type Node = Record<string, unknown>;

/** Every query parameter the contract declares, by name (a name means the same thing in every operation). */
function declaredQueryParameters(specFile: string): Map<string, QueryParameter> {
  const document = readSpec(specFile) as Node;
  const resolve = (node: Node): Node => {
    const ref = node.$ref;
    if (typeof ref !== 'string') return node;
    return resolve(
      ref
        .split('/')
        .slice(1)
        .reduce<Node>((at, key) => at[key] as Node, document),
    );
  };
  const declared = new Map<string, QueryParameter>();
  for (const item of Object.values(document.paths as Record<string, Node>)) {
    const operations = Object.values(item).filter(
      (value): value is Node => typeof value === 'object' && value !== null && 'responses' in value,
    );
    for (const parameters of [item.parameters, ...operations.map((operation) => operation.parameters)]) {
      for (const parameter of ((parameters as Node[] | undefined) ?? []).map(resolve)) {
        if (parameter.in !== 'query') continue;
        const schema = resolve(parameter.schema as Node);
        declared.set(parameter.name as string, { array: schema.type === 'array', integer: schema.type === 'integer' });
      }
    }
  }
  return declared;
}

const DECIMAL_INTEGER = /^-?[0-9]+$/;

/**
 * Reads the Public API's query string as RFC 3986 and the contract say, before the validator sees it:
 * only percent-escapes are decoded, so a `+` is a plus (an unencoded offset such as `+01:00` in a
 * date, which the contract allows with `allowReserved`), not the space of HTML forms; a parameter the
 * contract declares once may be given once; and an integer is plain decimal digits (the validator
 * would also take `0x10`, `1e1` or `3.0`). Every problem is reported at once, as a `400`.
 */
export function strictQueryStrings(specFile: string): RequestHandler {
  const declared = declaredQueryParameters(specFile);
  return (req, _res, next) => {
    const at = req.originalUrl.indexOf('?');
    // No prototype: a parameter named `__proto__` is a parameter like any other (and unknown, so refused).
    const query = Object.create(null) as Record<string, string | string[]>;
    const details: ErrorDetail[] = [];
    const counts = new Map<string, number>();
    for (const pair of at === -1 ? [] : req.originalUrl.slice(at + 1).split('&')) {
      if (pair === '') continue;
      const equals = pair.indexOf('=');
      const [rawName, rawValue] = equals === -1 ? [pair, ''] : [pair.slice(0, equals), pair.slice(equals + 1)];
      let name: string;
      let value: string;
      try {
        name = decodeURIComponent(rawName);
        value = decodeURIComponent(rawValue);
      } catch {
        details.push({
          path: `query.${rawName}`,
          message: 'is not valid percent-encoding (RFC 3986): escape % as %25',
        });
        continue;
      }
      counts.set(name, (counts.get(name) ?? 0) + 1);
      const existing = query[name];
      query[name] = existing === undefined ? value : [...(Array.isArray(existing) ? existing : [existing]), value];
    }
    for (const [name, count] of counts) {
      const parameter = declared.get(name);
      if (!parameter) continue;
      if (!parameter.array && count > 1) {
        details.push({ path: `query.${name}`, message: `must be given once; it was given ${count} times` });
        continue;
      }
      const values = [query[name]].flat() as string[];
      if (parameter.integer && values.some((value) => !DECIMAL_INTEGER.test(value))) {
        details.push({ path: `query.${name}`, message: 'must be an integer written in decimal digits, e.g. 20' });
      }
    }
    if (details.length > 0) {
      next(new ValidationError('The request does not match the API contract.', details));
      return;
    }
    Object.defineProperty(req, 'query', { value: query, writable: true, configurable: true, enumerable: true });
    next();
  };
}
