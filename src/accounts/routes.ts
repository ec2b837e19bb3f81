import { NotFoundError } from '../core/errors.js';
import type { AppContext } from '../http/context.js';
import type { PublicHandlers } from '../http/typed-routes.js';
import { findOrganization } from './organizations.js';

/** `GET /public/v1/is-connected`: whether the credential works, and for which organization. */
export function isConnectedOperations(ctx: AppContext): Pick<PublicHandlers, 'isConnected'> {
  return {
    isConnected: async ({ principal }) => {
      const organization = await findOrganization(ctx.db, principal.organizationId);
      if (!organization) throw new NotFoundError('The organization of this credential no longer exists.');
      return {
        status: 200,
        body: {
          connected: true,
          organization: { id: organization.id, name: organization.name },
          credential: { type: principal.credential.type, role: principal.role },
        },
      };
    },
  };
}
