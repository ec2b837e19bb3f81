/** Who a Public API request acts for: always one organization, through one credential. */
export interface Principal {
  organizationId: string;
  credential: {
    type: 'api_key' | 'oauth_token';
    /** Id of the API key or OAuth grant, for audit and `lastUsedAt`. */
    id: string;
  };
}
