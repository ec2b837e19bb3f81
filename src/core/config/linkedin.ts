import type { EnvReader } from './env-reader.js';

/** A version of LinkedIn's versioned APIs as its `Linkedin-Version` header names it (`202607`: July 2026). */
const VERSION = /^(\d{4})(\d{2})$/;
/**
 * The version this release was built and tested against. LinkedIn supports each monthly version for at
 * least a year and then answers 426 to it: the operator moves LINKEDIN_VERSION on before then.
 */
export const LINKEDIN_DEFAULT_VERSION = '202607';

/**
 * The operator's LinkedIn app (linkedin.com/developers), through which members, and the company pages
 * they administer, are connected and published to.
 */
export interface LinkedInConfig {
  clientId: string;
  clientSecret: string;
  /** The `Linkedin-Version` every call of the versioned API sends (YYYYMM). */
  version: string;
  /**
   * Whether the app has the Community Management API product: then the consent asks for the pages
   * the member administers too, and they are offered as channels of their own.
   */
  communityManagement: boolean;
  /** Where LinkedIn's API answers (https://api.linkedin.com). */
  apiUrl: string;
  /** Where LinkedIn's OAuth pages and token endpoint are (https://www.linkedin.com). */
  authUrl: string;
}

/** The operator's LinkedIn app, when LINKEDIN_CLIENT_ID and LINKEDIN_CLIENT_SECRET are set. */
export function readLinkedIn(read: EnvReader): LinkedInConfig | undefined {
  const app = read.pair('LINKEDIN_CLIENT_ID', 'LINKEDIN_CLIENT_SECRET', 'the LinkedIn app of this server');
  const version = read.text('LINKEDIN_VERSION') || LINKEDIN_DEFAULT_VERSION;
  const parts = VERSION.exec(version);
  if (!parts || Number(parts[2]) < 1 || Number(parts[2]) > 12 || Number(parts[1]) < 2022)
    read.problem(
      `LINKEDIN_VERSION must be a LinkedIn API version (YYYYMM) such as ${LINKEDIN_DEFAULT_VERSION}, got "${version}"`,
    );
  const communityManagement = read.boolean('LINKEDIN_COMMUNITY_MANAGEMENT', false);
  const apiUrl = read.origin('LINKEDIN_API_URL', 'https://api.linkedin.com');
  const authUrl = read.origin('LINKEDIN_AUTH_URL', 'https://www.linkedin.com');
  if (!app) return undefined;
  const [clientId, clientSecret] = app;
  return { clientId, clientSecret, version, communityManagement, apiUrl, authUrl };
}
