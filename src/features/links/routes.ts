// (ext) Endpoints of secure links (docs/portal.md): POST {base}/download/pin?k= sends a
// PIN to the link's recipient; GET {base}/download/info?k= describes the link for the landing page.
// Thin: SecureLinks does the work. Anonymous, so limited per client address as well.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { successEnvelope } from '../../platform/http/presenters.js';
import { errors, json, successExample } from '../../platform/http/schemas.js';

const LinkQuery = Type.Object({
  k: Type.Optional(Type.String({ maxLength: 512 })),
  lang: Type.Optional(Type.String({ maxLength: 8 })),
});

const pinSchema = {
  tags: ['links'],
  summary: "(ext) Send a PIN to the link's recipient",
  querystring: LinkQuery,
  response: {
    200: json(
      'PinSent',
      'The PIN is on its way; user is the uploader.',
      successExample('handlerDownloadList', 'USER1'),
    ),
    ...errors({
      400: 'Missing k, or an owner link (it needs no PIN).',
      401: 'Unknown, revoked or retired link.',
      403: 'Locked link.',
      429: 'A PIN was sent less than 60 s ago (Retry-After).',
    }),
  },
};

const infoSchema = {
  tags: ['links'],
  summary: '(ext) What the landing page shows about a link; no PIN, no side effects',
  querystring: LinkQuery,
  response: {
    200: json(
      'LinkInfo',
      'Link details.',
      successExample('handlerDownloadList', 'USER1', {
        file: {
          name: 'report.pdf',
          length: 52341,
          modified: 1655159872366,
          sender: 'USER1',
          message: 'Monthly report',
          expires: 1655764672366,
          secure: true,
          lang: 'pt',
        },
      }),
    ),
    ...errors({ 400: 'Missing k.', 401: 'Unknown, revoked or retired link.', 403: 'Locked link.' }),
  },
};

const limit = { rateLimit: { max: 60, timeWindow: '1 minute' } };

export const secureLinkRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { secureLinks } = app.services;

  app.post('/download/pin', { schema: pinSchema, config: limit }, async (request, reply) => {
    const { uploader } = await secureLinks.sendPin(request.query.k, request.query.lang, request.ip);
    return reply
      .header('Cache-Control', 'no-store')
      .send(successEnvelope('handlerDownloadList', uploader, {}));
  });

  app.get('/download/info', { schema: infoSchema, config: limit }, async (request, reply) => {
    const { uploader, file } = await secureLinks.info(request.query.k);
    return reply
      .header('Cache-Control', 'no-store')
      .send(successEnvelope('handlerDownloadList', uploader, { file }));
  });
};
