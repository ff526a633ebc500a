// (ext) Upload requests (docs/requests.md). The requester's: POST {base}/requests (a key needs scope
// `upload`), GET {base}/requests, GET {base}/requests/{id}, POST {base}/requests/{id}/close. The
// outsider's, without an account: GET {base}/requests/open?t= (the page's facts) and POST
// {base}/requests/pin?t= (a PIN to the invited address); the files then go through tus at
// {base}/uploads with `request <token>` in Upload-Metadata. Anonymous routes are limited per
// client address here and per request in the service.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { currentUser, requireUser } from '../../platform/http/auth-hooks.js';
import { successEnvelope } from '../../platform/http/presenters.js';
import { BASIC_OR_BEARER, errors, json, successExample } from '../../platform/http/schemas.js';
import {
  NewRequestBody,
  pageExample,
  REQUESTS_HANDLER,
  RequestIdParams,
  RequestTokenQuery,
  requestExample,
} from './schemas-requests.js';

const doc = (summary: string, id: string, sample: object, more: Record<number, string> = {}) => ({
  tags: ['requests'],
  summary: `(ext) ${summary}`,
  security: BASIC_OR_BEARER,
  response: {
    200: json(id, 'Done.', successExample(REQUESTS_HANDLER, 'alice', sample)),
    ...errors({
      400: 'Invalid parameters or body: nothing changed.',
      401: 'No or wrong credentials.',
      403: "An API key without scope 'upload'.",
      404: 'No such request of yours.',
      ...more,
    }),
  },
});

const anonymousDoc = (summary: string, id: string, sample: object, more: Record<number, string>) => ({
  tags: ['requests'],
  summary: `(ext) ${summary}`,
  querystring: RequestTokenQuery,
  response: {
    200: json(id, 'Done.', successExample(REQUESTS_HANDLER, null, sample)),
    ...errors({
      400: 'Missing t.',
      401: 'Unknown request link.',
      410: 'The request is closed or expired ("request closed").',
      429: 'Too many requests (Retry-After).',
      ...more,
    }),
  },
});

const noStore = { 'Cache-Control': 'no-store' };
const perAddress = { rateLimit: { max: 60, timeWindow: '1 minute' } };

export const requestRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { requests } = app.services;

  app.post(
    '/requests',
    {
      schema: {
        ...doc('Ask people without an account for files', 'RequestAnswer', { request: requestExample }),
        body: NewRequestBody,
      },
      preHandler: requireUser,
      config: { keyScope: 'upload' },
    },
    async (request, reply) => {
      const user = currentUser(request);
      const made = await requests.create(user, request.body, request.ip);
      return reply.headers(noStore).send(successEnvelope(REQUESTS_HANDLER, user.name, { request: made }));
    },
  );

  app.get(
    '/requests',
    {
      schema: doc('Your upload requests, newest first', 'RequestList', { requests: [requestExample] }),
      preHandler: requireUser,
      config: { keyScope: 'upload' },
    },
    async (request, reply) => {
      const user = currentUser(request);
      const list = await requests.list(user);
      return reply.headers(noStore).send(successEnvelope(REQUESTS_HANDLER, user.name, { requests: list }));
    },
  );

  outsiderRoutes(app);

  app.get(
    '/requests/:id',
    {
      schema: {
        ...doc('One of your upload requests, with what arrived', 'RequestDetail', {
          request: {
            ...requestExample,
            files: [
              {
                id: 7,
                name: 'invoice-01.pdf',
                length: 52341,
                from: 'bob@example.com',
                time: '2025-01-02T08:30:00.000Z',
              },
            ],
          },
        }),
        params: RequestIdParams,
      },
      preHandler: requireUser,
      config: { keyScope: 'upload' },
    },
    async (request, reply) => {
      const user = currentUser(request);
      const shown = await requests.show(user, request.params.id);
      return reply.headers(noStore).send(successEnvelope(REQUESTS_HANDLER, user.name, { request: shown }));
    },
  );

  app.post(
    '/requests/:id/close',
    {
      schema: {
        ...doc('Close one of your upload requests: its page and uploads answer 410', 'RequestAnswer', {
          request: {
            ...requestExample,
            state: 'closed',
            closed: '2025-01-03T09:00:00.000Z',
            closedReason: 'closed',
          },
        }),
        params: RequestIdParams,
      },
      preHandler: requireUser,
      config: { keyScope: 'upload' },
    },
    async (request, reply) => {
      const user = currentUser(request);
      const closed = await requests.close({ user, admin: false, remote: request.ip }, request.params.id);
      return reply.headers(noStore).send(successEnvelope(REQUESTS_HANDLER, user.name, { request: closed }));
    },
  );
};

/** The outsider's routes: no account, the request link's token. */
function outsiderRoutes(app: Parameters<FastifyPluginAsyncTypebox>[0]) {
  const { requestIntake } = app.services;
  app.get(
    '/requests/open',
    {
      schema: anonymousDoc("What a request's page shows", 'RequestPage', { request: pageExample }, {}),
      config: perAddress,
    },
    async (request, reply) => {
      const page = await requestIntake.page(request.query.t);
      return reply.headers(noStore).send(successEnvelope(REQUESTS_HANDLER, null, { request: page }));
    },
  );

  app.post(
    '/requests/pin',
    {
      schema: anonymousDoc(
        'Send a PIN to the invited address of a request link',
        'RequestPinSent',
        {},
        {
          400: 'Missing t, or an open link (it needs no PIN).',
          403: 'Locked link.',
          429: 'A PIN was sent less than 60 s ago, or too many requests (Retry-After).',
        },
      ),
      config: perAddress,
    },
    async (request, reply) => {
      await requestIntake.sendPin(request.query.t, request.query.lang, request.ip);
      return reply.headers(noStore).send(successEnvelope(REQUESTS_HANDLER, null, {}));
    },
  );
}
