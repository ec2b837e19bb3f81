import type { McpTool as ContractTool, McpToolParameter as ToolParameter } from '../../generated/mcp-tools.js';
import type { ToolDecision } from './decisions.js';

/**
 * The MCP tools made from the Public API's contract (run at build time by `scripts/gen-mcp-tools.ts`):
 * one tool per operation decided a tool, named by its operationId, described by its summary and
 * description, its input the operation's parameters and body and its output the 2xx body, as JSON
 * Schema with every `$ref` resolved so a client needs nothing else to read it.
 */

type JsonSchema = Record<string, unknown>;

// The shape of a tool is declared in the generated file itself, which imports nothing of src.
export type { McpTool as ContractTool, McpToolParameter as ToolParameter } from '../../generated/mcp-tools.js';

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  schema?: JsonSchema;
}

interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  parameters?: (Parameter | { $ref: string })[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: JsonSchema }> } | { $ref: string };
  responses?: Record<string, { $ref: string } | { content?: Record<string, { schema?: JsonSchema }> }>;
  security?: Record<string, string[]>[];
}

type PathItem = Partial<Record<(typeof METHODS)[number], Operation>> & { parameters?: Operation['parameters'] };

export interface Contract {
  paths: Record<string, PathItem>;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** OpenAPI's words that are no JSON Schema keywords (or point into the contract): left out of the tools. */
const OPENAPI_ONLY = new Set(['discriminator', 'example', 'xml', 'externalDocs']);

/** The operations of the contract that the server answers (its webhooks' are requests it sends). */
export function contractOperationIds(contract: Contract): string[] {
  const ids: string[] = [];
  for (const item of Object.values(contract.paths)) {
    for (const method of METHODS) {
      const id = item[method]?.operationId;
      if (id) ids.push(id);
    }
  }
  return ids;
}

/** Operations without a decision, and decisions of operations the contract does not have. */
export function undecided(
  contract: Contract,
  decisions: Readonly<Record<string, ToolDecision>>,
): { operations: string[]; decisions: string[] } {
  const ids = contractOperationIds(contract);
  return {
    operations: ids.filter((id) => !(id in decisions)),
    decisions: Object.keys(decisions).filter((id) => !ids.includes(id)),
  };
}

export function toolsFromContract(
  contract: Contract,
  decisions: Readonly<Record<string, ToolDecision>>,
): ContractTool[] {
  const missing = undecided(contract, decisions);
  if (missing.operations.length > 0 || missing.decisions.length > 0) {
    throw new Error(
      `src/mcp/decisions.ts must decide every operation of the contract: ` +
        `undecided ${JSON.stringify(missing.operations)}, unknown ${JSON.stringify(missing.decisions)}`,
    );
  }
  const tools: ContractTool[] = [];
  for (const [path, item] of Object.entries(contract.paths)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation?.operationId || !('tool' in decisions[operation.operationId]!)) continue;
      tools.push(toolOf(contract, path, method, operation, item.parameters ?? []));
    }
  }
  return tools;
}

function toolOf(
  contract: Contract,
  path: string,
  method: (typeof METHODS)[number],
  operation: Operation,
  pathParameters: NonNullable<Operation['parameters']>,
): ContractTool {
  const name = operation.operationId!;
  const resolve = (schema: unknown) => resolved(contract, schema, []);
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  const parameters: ToolParameter[] = [];
  // The path item's parameters apply to each of its operations, which may redefine one (same name and place).
  const own = (operation.parameters ?? []).map((reference) => resolve(reference) as unknown as Parameter);
  const shared = pathParameters
    .map((reference) => resolve(reference) as unknown as Parameter)
    .filter((parameter) => !own.some((mine) => mine.name === parameter.name && mine.in === parameter.in));
  for (const parameter of [...shared, ...own]) {
    if (parameter.in !== 'path' && parameter.in !== 'query' && parameter.in !== 'header') {
      throw new Error(`${name}: parameters in ${parameter.in} have no place in a tool's input`);
    }
    if (parameter.name in properties) throw new Error(`${name}: two parameters are named ${parameter.name}`);
    parameters.push({ name: parameter.name, in: parameter.in });
    properties[parameter.name] = {
      ...(parameter.description === undefined ? {} : { description: parameter.description }),
      ...(parameter.schema ?? {}),
    };
    if (parameter.required) required.push(parameter.name);
  }
  type Body = Exclude<Operation['requestBody'], undefined>;
  const body = operation.requestBody && (resolve(operation.requestBody) as Body);
  const bodySchema = body && 'content' in body ? body.content?.['application/json']?.schema : undefined;
  if (body && !bodySchema) throw new Error(`${name}: only JSON request bodies become tool input`);
  if (bodySchema) {
    if ('body' in properties) throw new Error(`${name}: a parameter named body would hide the request body`);
    properties.body = { description: 'The request body.', ...bodySchema };
    if (body && 'required' in body && body.required) required.push('body');
  }

  const success = Object.entries(operation.responses ?? {}).find(([status]) => /^2/.test(status))?.[1];
  const successSchema = success && (resolve(success) as { content?: Record<string, { schema?: JsonSchema }> });
  const output = successSchema?.content?.['application/json']?.schema;

  const scopes = new Set<string>();
  for (const requirement of operation.security ?? []) {
    for (const scope of Object.values(requirement).flat()) scopes.add(scope);
  }

  return {
    name,
    title: operation.summary ?? name,
    description: [operation.summary, operation.description?.trim()].filter(Boolean).join('\n\n'),
    operation: { method, path, parameters, hasBody: bodySchema !== undefined },
    inputSchema: {
      type: 'object',
      properties,
      ...(required.length > 0 ? { required } : {}),
      additionalProperties: false,
    },
    ...(output && objectSchema(output) ? { outputSchema: objectSchema(output) } : {}),
    annotations: {
      readOnlyHint: method === 'get',
      destructiveHint: method === 'delete',
      idempotentHint: method === 'get' || method === 'put' || method === 'delete',
      // The posts and media it makes reach the social networks.
      openWorldHint: method !== 'get',
    },
    scopes: [...scopes].sort(),
  };
}

/** MCP wants an output schema whose root is an object: the contract's 2xx bodies are objects or unions of objects. */
function objectSchema(schema: JsonSchema): (JsonSchema & { type: 'object' }) | undefined {
  if (schema.type === 'object') return schema as JsonSchema & { type: 'object' };
  if (schema.type !== undefined) return undefined;
  const branches = [schema.allOf, schema.oneOf, schema.anyOf].find(Array.isArray) as JsonSchema[] | undefined;
  if (branches?.every((branch) => objectSchema(branch) !== undefined)) return { type: 'object', ...schema };
  return undefined;
}

/** The node with every `$ref` replaced by what it names, and OpenAPI's own words left out. */
function resolved(contract: Contract, node: unknown, seen: string[]): JsonSchema {
  if (Array.isArray(node)) return node.map((entry) => resolved(contract, entry, seen)) as unknown as JsonSchema;
  if (!node || typeof node !== 'object') return node as JsonSchema;
  const object = node as JsonSchema;
  if (typeof object.$ref === 'string') {
    const ref = object.$ref;
    if (seen.includes(ref)) throw new Error(`${ref} refers to itself: a tool's schema cannot inline it`);
    const target = ref
      .replace(/^#\//, '')
      .split('/')
      .reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key], contract);
    if (target === undefined) throw new Error(`${ref} names nothing in the contract`);
    // Keywords beside a $ref (OpenAPI 3.1) add to what it names, e.g. a description.
    const { $ref: _ref, ...siblings } = object;
    return { ...resolved(contract, target, [...seen, ref]), ...resolved(contract, siblings, seen) };
  }
  const copy: JsonSchema = {};
  for (const [key, value] of Object.entries(object)) {
    if (OPENAPI_ONLY.has(key)) continue;
    // `examples` holds values, and the keys of `properties` are names: neither is read as OpenAPI's words.
    if (key === 'examples') copy[key] = value;
    else if (key === 'properties' && value && typeof value === 'object') {
      copy[key] = Object.fromEntries(
        Object.entries(value).map(([name, schema]) => [name, resolved(contract, schema, seen)]),
      );
    } else copy[key] = resolved(contract, value, seen);
  }
  return nullableAsAnyOf(copy);
}

// What describes a value rather than constrains it: stays beside an `anyOf` made of its type.
const ANNOTATIONS = new Set(['title', 'description', 'default', 'examples', 'deprecated', 'readOnly', 'writeOnly']);

/**
 * `type: [string, "null"]` as `anyOf` of one type each: the same values, in the form more clients read
 * (the MCP Inspector flags a type list as less portable; some map tool schemas onto one type per schema).
 */
function nullableAsAnyOf(schema: JsonSchema): JsonSchema {
  const { type } = schema;
  if (!Array.isArray(type) || type.length !== 2 || !type.includes('null')) return schema;
  const annotations: JsonSchema = {};
  const constraints: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'type') continue;
    (ANNOTATIONS.has(key) ? annotations : constraints)[key] = value;
  }
  const other = (type as unknown[]).find((name) => name !== 'null');
  return { ...annotations, anyOf: [{ type: other, ...constraints }, { type: 'null' }] };
}
