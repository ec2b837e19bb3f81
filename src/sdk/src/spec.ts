/**
 * The types generated from `openapi/public-v1.yaml` (paths, operations and schemas).
 *
 * In the repository this module re-exports `generated/public-v1.ts`; the package build
 * (`npm run sdk:build`) puts the generated file itself in its place, so the published package
 * carries the contract's types and imports nothing from outside itself.
 */
export type * from '../../../generated/public-v1.js';
