import type { CredentialType } from '../core/contract.js';

/** Who a Public API request acts for: always one organization, through one credential. */
export interface Principal {
  organizationId: string;
  credential: {
    type: CredentialType;
    /** Id of the API key or OAuth grant, for audit and `lastUsedAt`. */
    id: string;
  };
}
