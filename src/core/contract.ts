import fs from 'node:fs';
import { CORE_SCHEMA, load } from 'js-yaml';
import type { components } from '../../generated/public-v1.js';
import { projectPath } from './project-files.js';

/**
 * The contract's words, said once: the code takes the shapes and enumerations the hand-written
 * contracts define from the types generated from them, and the values of those enumerations (for
 * checks at run time) from the contracts themselves.
 */

/** The hand-written contracts, the source of truth for routes, validation, types and docs. */
export const SPEC_FILES = {
  publicV1: projectPath('openapi', 'public-v1.yaml'),
  oauth: projectPath('openapi', 'oauth.yaml'),
} as const;

type Schemas = components['schemas'];

/** The social networks a channel can belong to. */
export type Provider = Schemas['KnownProvider'];
/** Where a post is in its life. */
export type PostStatus = Schemas['KnownPostStatus'];
export type ChannelStatus = Schemas['KnownChannelStatus'];
/** The file types media can have, recognised from their bytes. */
export type MediaContentType = Schemas['KnownMediaContentType'];
export type MediaKind = Schemas['KnownMediaKind'];
/** A member's role in an organization, as the contract names it. */
export type ContractRole = Schemas['KnownRole'];
/** What a credential of the Public API is: an API key or an OAuth access token. */
export type CredentialType = Schemas['ConnectionStatus']['credential']['type'];
/** The body of every non-2xx Public API response. */
export type ErrorEnvelope = Schemas['Error'];
/** One problem of a request: where it is and what is wrong with it. */
export type ErrorDetail = Schemas['ErrorDetail'];

/** YAML as JSON values: the core schema, so a date in an example stays the string it is written as. */
export function parseYaml(text: string): unknown {
  return load(text, { schema: CORE_SCHEMA });
}

const parsed = new Map<string, unknown>();

/**
 * A contract as a fresh object, which the caller may change. Each file is parsed once per process:
 * YAML parsing is a good part of what starting the server costs.
 */
export function readSpec(specFile: string): unknown {
  if (!parsed.has(specFile)) parsed.set(specFile, parseYaml(fs.readFileSync(specFile, 'utf8')));
  return structuredClone(parsed.get(specFile));
}

/** The values of an enumeration of the Public API's contract, in the order it lists them. */
function enumValues<Name extends keyof Schemas>(name: Name): readonly Schemas[Name][] {
  const spec = readSpec(SPEC_FILES.publicV1) as { components: { schemas: Record<string, { enum?: unknown[] }> } };
  const values = spec.components.schemas[name]?.enum;
  if (!values) throw new Error(`components.schemas.${name} of ${SPEC_FILES.publicV1} is not an enumeration`);
  return values as Schemas[Name][];
}

export const PROVIDERS = enumValues('KnownProvider');

/** The longest text of a post the contract accepts (`PostItem.content.maxLength`), on any network. */
export const POST_CONTENT_MAX_LENGTH = (() => {
  const spec = readSpec(SPEC_FILES.publicV1) as {
    components: { schemas: { PostItem: { properties: { content: { maxLength: number } } } } };
  };
  return spec.components.schemas.PostItem.properties.content.maxLength;
})();
export const POST_STATUSES = enumValues('KnownPostStatus');
export const MEDIA_CONTENT_TYPES = enumValues('KnownMediaContentType');
