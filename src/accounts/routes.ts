import type { AppContext } from '../context.js';
import { NotFoundError } from '../errors.js';
import type { OperationHandlers } from '../http/typed-routes.js';
import { findOrganization } from './organizations.js';

export function connectionOperations(ctx: AppContext): Pick<OperationHandlers, 'isConnected'> {
  return {
    isConnected: async ({ principal }) => {
      const organization = await findOrganization(ctx.db, principal.organizationId);
      if (!organization) throw new NotFoundError('The organization of this credential no longer exists.');
      return {
        status: 200,
        body: {
          connected: true,
          organization: { id: organization.id, name: organization.name },
          credential: { type: principal.credential.type },
        },
      };
    },
  };
}
