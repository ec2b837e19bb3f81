import { createApiKey } from '../../src/accounts/api-keys.js';
import { createOrganizationWithOwner } from '../../src/accounts/organizations.js';
import { addChannel, type Provider } from '../../src/channels/channels.js';
import type { Db } from '../../src/db/database.js';
import { randomBase62 } from '../../src/ids.js';

export interface TestOrganization {
  id: string;
  name: string;
  userId: string;
  email: string;
  password: string;
  /** A live API key of the organization. */
  apiKey: string;
  auth: { Authorization: string };
}

export async function createOrganization(db: Db, name = 'Acme Studio'): Promise<TestOrganization> {
  const email = `owner-${randomBase62(8).toLowerCase()}@example.com`;
  const password = 'correct horse battery staple';
  const { organization, user } = await createOrganizationWithOwner(db, { organizationName: name, email, password });
  const { secret } = await createApiKey(db, organization.id, 'test key');
  return {
    id: organization.id,
    name: organization.name,
    userId: user.id,
    email,
    password,
    apiKey: secret,
    auth: { Authorization: `Bearer ${secret}` },
  };
}

export function createChannel(db: Db, organizationId: string, provider: Provider, name = `${provider} channel`) {
  return addChannel(db, { organization_id: organizationId, provider, name, username: null, picture: null });
}
