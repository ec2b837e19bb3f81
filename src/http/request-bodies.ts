import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { SPEC_FILES } from '../core/contract.js';
import type { ErrorDetail } from '../core/errors.js';
import { violationDetails } from './error-envelope.js';
import { isInstant } from './instant.js';
import { readSpecForValidator } from './spec.js';

/**
 * The Public API contract's check of an operation's JSON body, for the pages that act through the
 * same domain code as an operation without its HTTP route (the composer, the media upload). It
 * compiles the body's schema from the contract with the options the API's validator uses, and
 * reports violations as the API's `details`, with the same paths (`posts[0].settings.title`), so a
 * page can put each one next to its field. Nothing of the contract is written again here.
 */
export class RequestBodies {
  private ajv: Ajv2020 | undefined;
  private readonly compiled = new Map<string, ValidateFunction>();

  /** The problems of `body` as the request body of `operationId`; none when it is valid. */
  check(operationId: string, body: unknown): ErrorDetail[] {
    const validate = this.validator(operationId);
    if (validate(body)) return [];
    // As express-openapi-validator reports them: a missing or extra property is named in the path.
    const violations = (validate.errors ?? []).map((error) => {
      const { missingProperty, additionalProperty, unevaluatedProperty } = error.params as Record<
        string,
        string | undefined
      >;
      const property = missingProperty ?? additionalProperty ?? unevaluatedProperty;
      return {
        path: `/body${error.instancePath}${property === undefined ? '' : `/${property}`}`,
        message: error.message ?? 'is not valid',
        errorCode: `${error.keyword}.openapi.validation`,
      };
    });
    return violationDetails(violations);
  }

  private validator(operationId: string): ValidateFunction {
    const cached = this.compiled.get(operationId);
    if (cached) return cached;
    const spec = readSpecForValidator(SPEC_FILES.publicV1) as {
      paths: Record<
        string,
        Record<string, { operationId?: string; requestBody?: { content?: Record<string, { schema?: object }> } }>
      >;
    };
    const operation = Object.values(spec.paths)
      .flatMap((item) => Object.values(item))
      .find((candidate) => candidate.operationId === operationId);
    const schema = operation?.requestBody?.content?.['application/json']?.schema;
    if (!schema) throw new Error(`${operationId} takes no JSON body in ${SPEC_FILES.publicV1}`);
    if (!this.ajv) {
      this.ajv = new Ajv2020({
        allErrors: true,
        coerceTypes: false,
        discriminator: true,
        strict: false,
        logger: false,
      });
      this.ajv.addFormat('date-time', { type: 'string', validate: isInstant });
      this.ajv.addSchema(spec, 'contract');
    }
    // The body's schema refers to the contract's components: resolved inside the document added above.
    const validate = this.ajv.compile({
      $ref: `contract#/paths/${pointerTo(spec, operationId)}/requestBody/content/application~1json/schema`,
    });
    this.compiled.set(operationId, validate);
    return validate;
  }
}

/** The JSON pointer (from `paths`) of an operation: its path, escaped, and its method. */
function pointerTo(
  spec: { paths: Record<string, Record<string, { operationId?: string }>> },
  operationId: string,
): string {
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (operation?.operationId === operationId) return `${path.replace(/~/g, '~0').replace(/\//g, '~1')}/${method}`;
    }
  }
  throw new Error(`no operation ${operationId}`);
}
