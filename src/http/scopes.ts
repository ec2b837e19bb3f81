import type { Response } from 'express';
import { readSpec, SPEC_FILES } from '../core/contract.js';
import { ForbiddenError } from '../core/errors.js';
import type { Principal } from './principal.js';
import { protectedResourceChallenge } from './resource-challenge.js';

/**
 * OAuth scopes of the Public API, as the contract defines them: the `oauth2` security scheme lists
 * them with their meaning, and each operation's `security` names the one it needs. A `write` scope
 * includes the `read` scope of the same kind.
 */
interface ContractSecurity {
  components: {
    securitySchemes: { oauth2: { flows: { authorizationCode: { scopes: Record<string, string> } } } };
  };
  paths: Record<string, Record<string, { operationId?: string; security?: Record<string, string[]>[] }>>;
}

const contract = () => readSpec(SPEC_FILES.publicV1) as ContractSecurity;

/** Every scope of the contract, with what it lets a token do, in the contract's order. */
export function contractScopes(): ReadonlyMap<string, string> {
  return new Map(Object.entries(contract().components.securitySchemes.oauth2.flows.authorizationCode.scopes));
}

/** The scope each operation of the contract needs (`undefined`: none, any token may call it). */
export function scopesByOperation(): ReadonlyMap<string, string | undefined> {
  const byOperation = new Map<string, string | undefined>();
  for (const item of Object.values(contract().paths)) {
    for (const operation of Object.values(item)) {
      if (!operation.operationId) continue;
      const scopes = operation.security?.find((requirement) => 'oauth2' in requirement)?.oauth2 ?? [];
      byOperation.set(operation.operationId, scopes[0]);
    }
  }
  return byOperation;
}

/** Whether granted scopes include `needed`: itself, or the `write` scope of a `read` one. */
export function scopesInclude(granted: readonly string[], needed: string): boolean {
  return granted.includes(needed) || (needed.endsWith(':read') && granted.includes(needed.replace(/:read$/, ':write')));
}

/**
 * Refuses a principal whose token's scopes do not include `needed` (RFC 6750 §3.1 `insufficient_scope`:
 * `403` with the challenge naming the scope). Credentials without scopes (API keys, tokens asked for
 * without `scope`) pass.
 */
export function assertScope(principal: Principal, needed: string | undefined, res: Response, resourceUrl: string) {
  if (needed === undefined || !principal.scopes || scopesInclude(principal.scopes, needed)) return;
  const granted = principal.scopes.join(' ') || 'none';
  const message = `This access token's scopes (${granted}) do not include ${needed}, which this operation needs.`;
  res.setHeader(
    'WWW-Authenticate',
    protectedResourceChallenge(resourceUrl, { error: 'insufficient_scope', description: message, scope: needed }),
  );
  throw new ForbiddenError(message);
}
