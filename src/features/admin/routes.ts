// (ext) The admin API under {base}/admin/ (docs/admin.md): every route needs an account whose row
// says auditor or admin (a read) or admin (a change). The check is a hook of this plugin, so no
// admin route can be added without it; each area registers its routes below. It runs before the
// request is validated: whoever may not call a route gets 403 whatever the body or query says.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { forbidden } from '../../platform/errors.js';
import { currentUser, keyScopeOfRoutes, requireUser } from '../../platform/http/auth-hooks.js';
import { canAdminister, canAudit, roleOf } from '../users/roles.js';
import { auditRoutes } from './routes-audit.js';
import { adminKeyRoutes } from './routes-keys.js';
import { outboxRoutes } from './routes-outbox.js';
import { adminRequestRoutes } from './routes-requests.js';
import { statsRoutes } from './routes-stats.js';
import { transferRoutes } from './routes-transfers.js';
import { adminUserRoutes } from './routes-users.js';

/** A read (GET, HEAD) needs an auditor or an admin, a change an admin: the role just read. */
export async function requireAdminRole(request: FastifyRequest): Promise<void> {
  const role = roleOf(currentUser(request));
  const reading = request.method === 'GET' || request.method === 'HEAD';
  if (reading ? !canAudit(role) : !canAdminister(role))
    throw forbidden(reading ? 'an auditor or admin role is required' : 'an admin role is required');
}

export const adminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.addHook('preValidation', requireUser);
  app.addHook('preValidation', requireAdminRole);
  // A key with scopes reads with admin-read (or admin) and changes with admin.
  keyScopeOfRoutes(app, (method) => (method === 'GET' || method === 'HEAD' ? 'admin-read' : 'admin'));
  await app.register(adminUserRoutes);
  await app.register(auditRoutes);
  await app.register(transferRoutes);
  await app.register(outboxRoutes);
  await app.register(statsRoutes);
  await app.register(adminKeyRoutes);
  await app.register(adminRequestRoutes);
};
