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
  const strip = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(strip);
    else if (node && typeof node === 'object') {
      for (const [key, value] of Object.entries(node)) {
        if (key === 'discriminator' && value && typeof value === 'object') delete (value as { mapping?: unknown }).mapping;
        strip(value);
      }
    }
  };
  strip(document);
  return document;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

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
