// (ext) Endpoints of secure links (DESIGN §5, docs/portal.md): POST {base}/download/pin?k= sends a
// PIN to the link's recipient; GET {base}/download/info?k= describes the link for the landing page.
// Thin: SecureLinks does the work. Anonymous, so limited per client address as well.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { successEnvelope } from '../presenters.js';

const LinkQuery = Type.Object({
  k: Type.Optional(Type.String({ maxLength: 512 })),
  lang: Type.Optional(Type.String({ maxLength: 8 })),
});

const limit = { rateLimit: { max: 60, timeWindow: '1 minute' } };

export const secureLinkRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { secureLinks } = app.services;

  app.post('/download/pin', { schema: { querystring: LinkQuery }, config: limit }, async (request, reply) => {
    const { uploader } = await secureLinks.sendPin(request.query.k, request.query.lang, request.ip);
    return reply
      .header('Cache-Control', 'no-store')
      .send(successEnvelope('handlerDownloadList', uploader, {}));
  });

  app.get('/download/info', { schema: { querystring: LinkQuery }, config: limit }, async (request, reply) => {
    const { uploader, file } = await secureLinks.info(request.query.k);
    return reply
      .header('Cache-Control', 'no-store')
      .send(successEnvelope('handlerDownloadList', uploader, { file }));
  });
};
