// (ext) The admin API's upload requests (docs/requests.md, "Admin"): every account's requests
// listed (GET /admin/requests, auditors too) and any closed (POST /admin/requests/{id}/close,
// admins; the audit row names the acting admin). The admin plugin has checked the role.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { currentUser } from '../../platform/http/auth-hooks.js';
import { BASIC_OR_BEARER, errors, json, successExample } from '../../platform/http/schemas.js';
import { ADMIN_REQUESTS_HANDLER, RequestIdParams, requestExample } from '../requests/schemas-requests.js';
import { sendUncached } from './routes-shared.js';

const doc = (summary: string, id: string, sample: object) => ({
  tags: ['admin'],
  summary: `(ext) ${summary}`,
  security: BASIC_OR_BEARER,
  response: {
    200: json(id, 'Done.', successExample(ADMIN_REQUESTS_HANDLER, 'alice', sample)),
    ...errors({
      400: 'Invalid parameters.',
      401: 'No or wrong credentials.',
      403: 'Not an admin (an auditor may only list).',
      404: 'No such request.',
    }),
  },
});

export const adminRequestRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { requests } = app.services;

  app.get(
    '/requests',
    {
      schema: doc("Every account's upload requests, newest first", 'AdminRequestList', {
        requests: [requestExample],
      }),
    },
    async (request, reply) => {
      const list = await requests.list(null);
      return sendUncached(ADMIN_REQUESTS_HANDLER, request, reply, { requests: list });
    },
  );

  app.post(
    '/requests/:id/close',
    {
      schema: {
        ...doc('Close any upload request', 'AdminRequestAnswer', {
          request: {
            ...requestExample,
            state: 'closed',
            closed: '2025-01-03T09:00:00.000Z',
            closedReason: 'admin',
          },
        }),
        params: RequestIdParams,
      },
    },
    async (request, reply) => {
      const closed = await requests.close(
        { user: currentUser(request), admin: true, remote: request.ip },
        request.params.id,
      );
      return sendUncached(ADMIN_REQUESTS_HANDLER, request, reply, { request: closed });
    },
  );
};
