import { readSpec } from '../core/contract.js';

export interface OperationRoute {
  operationId: string;
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** The path as the spec writes it, e.g. `/public/v1/posts/{id}`. */
  path: string;
  /** The same path in Express syntax, e.g. `/public/v1/posts/:id`. */
  expressPath: string;
}

/**
 * A contract as express-openapi-validator should see it. Ajv implements OpenAPI's `discriminator`
 * (so a bad provider `settings` object is reported against the provider it names, not against every
 * provider) but refuses `discriminator.mapping`, which the docs and the generated types use. Each
 * branch of our unions pins the discriminating property with `const`, so dropping the mapping loses
 * nothing for validation.
 */
export function readSpecForValidator(specFile: string): object {
  const document = readSpec(specFile) as object;
  wrapDiscriminatedBodies(document);
  const strip = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(strip);
    else if (node && typeof node === 'object') {
      for (const [key, value] of Object.entries(node)) {
        if (key === 'discriminator' && value && typeof value === 'object')
          delete (value as { mapping?: unknown }).mapping;
        strip(value);
      }
    }
  };
  strip(document);
  return document;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/**
 * express-openapi-validator decides a request body that is itself a discriminated union on its own,
 * by the mapping's keys or else the branches' schema names, never by the branches' `const`/`enum`;
 * with the mapping gone it would refuse every real value (`schedule` is no schema's name). Wrapped in
 * an `allOf`, such a body is one schema for Ajv, whose `discriminator` reads the branches' values.
 */
function wrapDiscriminatedBodies(document: object): void {
  type Schema = { $ref?: string; discriminator?: unknown };
  const spec = document as {
    paths?: Record<
      string,
      Partial<Record<string, { requestBody?: { content?: Record<string, { schema?: Schema }> } }>>
    >;
  };
  const target = (ref: string): Schema | undefined =>
    ref
      .replace(/^#\//, '')
      .split('/')
      .reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key], document) as Schema | undefined;
  for (const item of Object.values(spec.paths ?? {})) {
    for (const method of METHODS) {
      for (const media of Object.values(item[method]?.requestBody?.content ?? {})) {
        const ref = media.schema?.$ref;
        if (ref && target(ref)?.discriminator) media.schema = { allOf: [{ $ref: ref }] } as Schema;
      }
    }
  }
}

/** Every operation of a spec, by operationId. */
export function readOperationRoutes(specFile: string): Map<string, OperationRoute> {
  const document = readSpec(specFile) as {
    paths: Record<string, Partial<Record<string, { operationId?: string }>>>;
  };
  const routes = new Map<string, OperationRoute>();
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const operationId = item[method]?.operationId;
      if (!operationId) continue;
      routes.set(operationId, {
        operationId,
        method,
        path,
        expressPath: path.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1'),
      });
    }
  }
  return routes;
}
