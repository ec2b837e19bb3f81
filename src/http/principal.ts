import type { CredentialType } from '../core/contract.js';
import type { Role } from '../core/roles.js';

/** Who a Public API request acts for: always one organization, through one credential. */
export interface Principal {
  organizationId: string;
  credential: {
    type: CredentialType;
    /** Id of the API key or OAuth grant, for audit and `lastUsedAt`. */
    id: string;
  };
  /**
   * RFC 8707: the resource an OAuth access token was issued for (`{PUBLIC_URL}/mcp`,
   * `{PUBLIC_URL}/public/v1` or `{PUBLIC_URL}`); absent or `null` for a credential good for every
   * resource (API keys, and tokens issued without `resource`). Check it with `audienceAccepts`.
   */
  audience?: string | null;
  /** The OAuth scopes of the token; absent or `null` for a credential that may call every operation. */
  scopes?: readonly string[] | null;
  /**
   * The role the credential acts with: an API key's own, an OAuth grant's (its approver's); `owner`
   * for the credentials made before roles existed.
   */
  role: Role;
}
