import fs from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { createGeneratorSync } from 'json-schema-faker';
import { parseYaml, SPEC_FILES } from '../../src/core/contract.js';

/**
 * Requests generated from the contracts, valid and invalid, and the checks of their answers. The
 * values come from json-schema-faker, seeded, so a failure names a request that the same seed makes
 * again; every generated request is checked with Ajv against the contract before it is sent, so a
 * request is called valid or invalid by the contract, not by the generator.
 */

export type Api = 'public' | 'oauth';
type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

// The parts of a contract (an OpenAPI document read as plain data) that the generator reads.
/** A node, or a `$ref` to it elsewhere in the contract. */
type Ref<T> = T | { $ref: string };
interface SchemaNode {
  type?: string;
  enum?: unknown[];
  items?: SchemaNode & { $ref?: string };
  minimum?: number;
  maximum?: number;
  maxLength?: number;
}
interface ParameterNode {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  example?: unknown;
  schema: SchemaNode;
}
interface OperationNode {
  operationId: string;
  parameters?: Ref<ParameterNode>[];
  requestBody?: Ref<{ required?: boolean; content: Record<string, unknown> }>;
  responses: Record<
    string,
    Ref<{ content?: Record<string, unknown>; headers?: Record<string, Ref<{ required?: boolean }>> }>
  >;
}
type PathItem = { parameters?: Ref<ParameterNode>[] } & Partial<
  Record<'get' | 'post' | 'put' | 'patch' | 'delete', OperationNode>
>;
interface Contract {
  paths: Record<string, PathItem>;
  components: Record<string, unknown>;
}

interface SpecParameter extends ParameterNode {
  /** The JSON pointer of its schema in the contract. */
  schemaPointer: string;
}

export interface FuzzOperation {
  api: Api;
  id: string;
  method: string;
  /** As written in the contract, e.g. `/public/v1/posts/{id}`. */
  path: string;
  parameters: SpecParameter[];
  /** The media types of the request body, each with the JSON pointer of its schema. */
  body: { required: boolean; schemas: Record<string, string> } | undefined;
  /** Every declared status, with the JSON pointer of each content's schema and the required headers. */
  responses: Map<number, { content: Record<string, string>; requiredHeaders: string[] }>;
}

export interface FuzzRequest {
  op: FuzzOperation;
  /** Whether the contract accepts it (checked with Ajv); an invalid one must be refused. */
  valid: boolean;
  /** What was broken in an invalid request, for the report. */
  mutation: string | undefined;
  query: [string, string][];
  headers: Record<string, string>;
  body: { mediaType: string; value: unknown } | undefined;
}

const SPECS: Record<Api, Contract> = {
  public: parseYaml(fs.readFileSync(SPEC_FILES.publicV1, 'utf8')) as Contract,
  oauth: parseYaml(fs.readFileSync(SPEC_FILES.oauth, 'utf8')) as Contract,
};

const pointerPart = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');
const at = (api: Api, pointer: string): unknown =>
  pointer
    .slice(2)
    .split('/')
    .reduce<unknown>(
      (node, key) => (node as Record<string, unknown>)[key.replaceAll('~1', '/').replaceAll('~0', '~')],
      SPECS[api],
    );

/** A node and the pointer it lives at, after following a `$ref` of the contract. */
function follow<T extends object>(api: Api, node: Ref<T>, pointer: string): { node: T; pointer: string } {
  return '$ref' in node ? { node: at(api, node.$ref) as T, pointer: node.$ref } : { node, pointer };
}

export function readOperations(api: Api): FuzzOperation[] {
  const spec = SPECS[api];
  const operations: FuzzOperation[] = [];
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete'] as const) {
      const op = item[method];
      if (!op) continue;
      const base = `#/paths/${pointerPart(path)}/${method}`;
      const located = [
        ...(item.parameters ?? []).map((p, i) => follow(api, p, `#/paths/${pointerPart(path)}/parameters/${i}`)),
        ...(op.parameters ?? []).map((p, i) => follow(api, p, `${base}/parameters/${i}`)),
      ];
      const parameters = located.map(({ node, pointer }): SpecParameter => ({
        ...node,
        schemaPointer: `${pointer}/schema`,
      }));
      let body: FuzzOperation['body'];
      if (op.requestBody) {
        const { node, pointer } = follow(api, op.requestBody, `${base}/requestBody`);
        body = {
          required: node.required === true,
          schemas: Object.fromEntries(
            Object.keys(node.content).map((type) => [type, `${pointer}/content/${pointerPart(type)}/schema`]),
          ),
        };
      }
      const responses: FuzzOperation['responses'] = new Map();
      for (const [status, raw] of Object.entries(op.responses)) {
        const { node, pointer } = follow(api, raw, `${base}/responses/${status}`);
        responses.set(Number(status), {
          content: Object.fromEntries(
            Object.keys(node.content ?? {}).map((type) => [type, `${pointer}/content/${pointerPart(type)}/schema`]),
          ),
          requiredHeaders: Object.entries(node.headers ?? {})
            .filter(([, header]) => follow(api, header, '').node.required === true)
            .map(([name]) => name.toLowerCase()),
        });
      }
      operations.push({ api, id: op.operationId, method: method.toUpperCase(), path, parameters, body, responses });
    }
  }
  return operations;
}

// The contracts as a client sees them: JSON Schema 2020-12 with their formats (`discriminator` is
// an annotation here: Ajv refuses its `mapping`, and the `oneOf` beside it decides alone).
const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
formats.default(ajv);
ajv.addSchema(SPECS.public, 'public');
ajv.addSchema(SPECS.oauth, 'oauth');
const validators = new Map<string, ReturnType<typeof ajv.compile>>();

/** Whether `value` is valid against the schema at `pointer` of the API's contract; the errors when not. */
export function check(api: Api, pointer: string, value: unknown): { valid: boolean; errors: string } {
  const key = `${api}${pointer}`;
  let validate = validators.get(key);
  if (!validate) {
    validate = ajv.compile({ $ref: `${api}${pointer}` });
    validators.set(key, validate);
  }
  // No schema of the contracts is asynchronous: Ajv answers at once.
  const valid = validate(value) === true;
  return { valid, errors: valid ? '' : ajv.errorsText(validate.errors, { dataVar: '' }) };
}

/** A small seeded PRNG (mulberry32) for the choices around the generator: which parameters, which mutation. */
function choices(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    chance: (p: number) => next() < p,
    pick: <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!,
  };
}

export interface Realistic {
  /** Replaces generated values that name records or addresses with real ones, so requests reach the handlers. */
  body(op: FuzzOperation, value: Json): Json;
  /** Real values of some parameters (e.g. the OAuth app's client id), or `undefined` to keep the generated one. */
  parameter(op: FuzzOperation, name: string): string | undefined;
}

export interface GenerateOptions {
  seed: number;
  valid: number;
  invalid: number;
  realistic: Realistic;
  /** Date-times the generator makes: after the server's clock, so that schedules are not in the past. */
  dateTimes: { min: string; max: string };
}

/** `valid` and `invalid` requests per operation, the same for the same seed. */
export function generateRequests(operations: FuzzOperation[], options: GenerateOptions): FuzzRequest[] {
  const random = choices(options.seed);
  const faker = createGeneratorSync({
    seed: options.seed,
    optionalsProbability: 0.5,
    maxItems: 3,
    maxLength: 60,
    minDateTime: options.dateTimes.min,
    maxDateTime: options.dateTimes.max,
  });
  const fake = (api: Api, pointer: string): Json | undefined => {
    // The generator resolves `$ref`s within the document it is given, and stops on a few shapes
    // (minProperties with closed objects); another seed then gives another value.
    const { node } = follow(api, at(api, pointer) as Ref<object>, pointer);
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        return faker.generate({ ...node, components: SPECS[api].components }) as Json;
      } catch {
        // next seed
      }
    }
    return undefined;
  };

  const requests: FuzzRequest[] = [];
  for (const op of operations) {
    const validOnes: FuzzRequest[] = [];
    for (let attempt = 0; validOnes.length < options.valid && attempt < options.valid * 4; attempt++) {
      const request = validRequest(op, random, fake, options.realistic);
      if (request) validOnes.push(request);
    }
    requests.push(...validOnes);
    if (validOnes.length === 0) continue;
    let made = 0;
    for (let attempt = 0; made < options.invalid && attempt < options.invalid * 6; attempt++) {
      const broken = invalidRequest(random.pick(validOnes), random);
      if (broken) {
        requests.push(broken);
        made++;
      }
    }
  }
  return requests;
}

type Random = ReturnType<typeof choices>;
type Fake = (api: Api, pointer: string) => Json | undefined;

/** A scalar as a query string or a header carries it. */
const text = (value: Json) => (typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value));

/** A parameter's value as the query string carries it, or `undefined` when the generator gave up. */
function serialize(value: Json): string[] {
  return Array.isArray(value) ? value.map(text) : [text(value)];
}

function validRequest(op: FuzzOperation, random: Random, fake: Fake, realistic: Realistic): FuzzRequest | undefined {
  const query: [string, string][] = [];
  const headers: Record<string, string> = {};
  for (const parameter of op.parameters) {
    if (parameter.in === 'path') continue;
    // A cursor of the generator's is refused as not issued by this API: its paths are tested elsewhere.
    if (parameter.name === 'cursor') continue;
    if (!parameter.required && !random.chance(0.5)) continue;
    const real = realistic.parameter(op, parameter.name);
    const value = real ?? fake(op.api, parameter.schemaPointer);
    if (value === undefined || !check(op.api, parameter.schemaPointer, value).valid) return undefined;
    if (parameter.in === 'query') for (const item of serialize(value)) query.push([parameter.name, item]);
    else headers[parameter.name] = text(value);
  }
  let body: FuzzRequest['body'];
  if (op.body) {
    const mediaType = random.pick(Object.keys(op.body.schemas));
    const pointer = op.body.schemas[mediaType]!;
    const generated = fake(op.api, pointer);
    if (generated === undefined) return undefined;
    const value = realistic.body(op, generated);
    // Form bodies carry strings only: the generator's other values are no form the contract takes.
    if (!check(op.api, pointer, value).valid) return undefined;
    body = { mediaType, value };
  }
  return { op, valid: true, mutation: undefined, query, headers, body };
}

/** An enumeration, or an array of one (`status` refers to PostStatus). */
const hasEnumeration = (p: SpecParameter) => Boolean(p.schema.enum || p.schema.items?.enum || p.schema.items?.$ref);

/** One way of breaking a valid request that the contract refuses, or `undefined` when none applies. */
function invalidRequest(valid: FuzzRequest, random: Random): FuzzRequest | undefined {
  const { op } = valid;
  const queryParameters = op.parameters.filter((p) => p.in === 'query');
  const kinds = [
    ...(valid.body && valid.body.mediaType === 'application/json'
      ? ['drop a required field', 'a field of another type', 'an undeclared field', 'a body that is no object']
      : []),
    ...(valid.body && valid.body.mediaType !== 'application/json'
      ? ['drop a required field', 'an undeclared field']
      : []),
    ...(queryParameters.some((p) => p.schema.type === 'integer')
      ? ['an integer out of range', 'an integer that is not one']
      : []),
    ...(queryParameters.some((p) => hasEnumeration(p)) ? ['a value of no enumeration'] : []),
    ...(queryParameters.some((p) => p.schema.maxLength !== undefined) ? ['a string too long'] : []),
    ...(queryParameters.some((p) => p.required) ? ['a missing required parameter'] : []),
    // Only the Public API refuses query parameters it does not declare; OAuth ignores unknown ones (RFC 6749 §3.1).
    ...(op.api === 'public' ? ['an undeclared query parameter'] : []),
  ];
  if (kinds.length === 0) return undefined;
  const kind = random.pick(kinds);
  const request: FuzzRequest = {
    ...valid,
    valid: false,
    mutation: kind,
    query: [...valid.query],
    headers: { ...valid.headers },
  };
  const body = valid.body?.value as Record<string, Json> | undefined;
  const pointer = valid.body ? op.body!.schemas[valid.body.mediaType]! : '';
  const withBody = (value: unknown) => {
    request.body = { mediaType: valid.body!.mediaType, value };
    return check(op.api, pointer, value).valid ? undefined : request;
  };
  const integer = () => random.pick(queryParameters.filter((p) => p.schema.type === 'integer'));
  const setQuery = (name: string, values: string[]) => {
    request.query = [
      ...request.query.filter(([key]) => key !== name),
      ...values.map((value): [string, string] => [name, value]),
    ];
    return request;
  };

  switch (kind) {
    case 'drop a required field': {
      const required = (body && typeof body === 'object' && !Array.isArray(body) ? Object.keys(body) : []).filter(
        (key) => !check(op.api, pointer, Object.fromEntries(Object.entries(body!).filter(([k]) => k !== key))).valid,
      );
      if (required.length === 0) return undefined;
      const dropped = random.pick(required);
      return withBody(Object.fromEntries(Object.entries(body!).filter(([key]) => key !== dropped)));
    }
    case 'a field of another type': {
      if (!body || typeof body !== 'object' || Array.isArray(body) || Object.keys(body).length === 0) return undefined;
      const key = random.pick(Object.keys(body));
      const original = body[key];
      const replacement =
        typeof original === 'string'
          ? 42
          : typeof original === 'number'
            ? String(original)
            : typeof original === 'boolean'
              ? 'true'
              : Array.isArray(original)
                ? 'x'
                : 7;
      return withBody({ ...body, [key]: replacement });
    }
    case 'an undeclared field':
      return withBody({ ...(body as object), colour: 'blue' });
    case 'a body that is no object':
      return withBody(random.pick([[], 'posts', 42, null, [body]]));
    case 'an integer out of range': {
      const parameter = integer();
      const { minimum, maximum } = parameter.schema;
      return setQuery(parameter.name, [
        String(random.chance(0.5) && maximum !== undefined ? maximum + 1 : (minimum ?? 1) - 1),
      ]);
    }
    case 'an integer that is not one':
      return setQuery(integer().name, [random.pick(['abc', '1.5', '0x10', '1e1', ''])]);
    case 'a value of no enumeration': {
      const parameter = random.pick(queryParameters.filter((p) => hasEnumeration(p)));
      return setQuery(parameter.name, ['no_such_value']);
    }
    case 'a string too long': {
      const parameter = random.pick(queryParameters.filter((p) => p.schema.maxLength !== undefined));
      return setQuery(parameter.name, ['x'.repeat(parameter.schema.maxLength! + 1)]);
    }
    case 'a missing required parameter': {
      const parameter = random.pick(queryParameters.filter((p) => p.required));
      return setQuery(parameter.name, []);
    }
    case 'an undeclared query parameter':
      return setQuery('colour', ['blue']);
  }
  return undefined;
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

/**
 * Every way an answer breaks the contract: a status the operation does not declare, a 5xx other than
 * a declared 501 or 502 (a 500 is never an answer), a body or required header that is not the
 * declared one, or an invalid request that was not refused.
 */
export function contractProblems(request: FuzzRequest, answer: Answer): string[] {
  const { op } = request;
  const problems: string[] = [];
  const declared = op.responses.get(answer.status);
  if (!declared) problems.push(`answered ${answer.status}, which ${op.id} does not declare`);
  if (answer.status === 500 || answer.status >= 503) problems.push(`answered ${answer.status}`);
  if (!request.valid) {
    // The authorize endpoint answers a bad request of a known app by redirecting to the app with
    // `error` (RFC 6749 §4.1.2.1); the other OAuth endpoints with their RFC 6749 §5.2 errors.
    const redirectedWithError = answer.status === 302 && /[?&]error=/.test(answer.headers.get('location') ?? '');
    const refused =
      op.api === 'public'
        ? answer.status === 400
        : (answer.status >= 400 && answer.status < 500) || redirectedWithError;
    if (!refused) {
      const where = answer.headers.get('location') ? ` to ${answer.headers.get('location')}` : '';
      problems.push(
        `took a request with ${request.mutation} (answered ${answer.status}${where}, not ${op.api === 'public' ? '400' : 'a 4xx'})`,
      );
    }
  }
  if (!declared) return problems;
  for (const header of declared.requiredHeaders) {
    if (!answer.headers.has(header)) problems.push(`${answer.status} without its ${header} header`);
  }
  const types = Object.keys(declared.content);
  if (types.length === 0) {
    if (answer.text !== '') problems.push(`${answer.status} with a body, though none is declared`);
    return problems;
  }
  const type = answer.headers.get('content-type')?.split(';')[0]?.trim() ?? '';
  const pointer = declared.content[type];
  if (!pointer) {
    problems.push(`${answer.status} as ${type || 'no content type'}, not ${types.join(' or ')}`);
    return problems;
  }
  let body: unknown = answer.text;
  if (type.endsWith('json')) {
    try {
      body = JSON.parse(answer.text);
    } catch {
      problems.push(`${answer.status} whose body is not JSON`);
      return problems;
    }
  }
  const result = check(op.api, pointer, body);
  if (!result.valid) problems.push(`${answer.status} body breaks its schema: ${result.errors}`);
  return problems;
}

/** The request as a line of a report. */
export function describe(request: FuzzRequest, path: string): string {
  const query = request.query.length ? `?${new URLSearchParams(request.query).toString()}` : '';
  const body = request.body ? ` ${JSON.stringify(request.body.value)?.slice(0, 200)}` : '';
  return `${request.op.method} ${path}${query}${body}${request.mutation ? ` [${request.mutation}]` : ''}`;
}
