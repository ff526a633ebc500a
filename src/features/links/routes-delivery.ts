// (ext) Delivery tracking for the sender (docs/webhooks.md): GET {base}/download/status?k=<owner token>
// lists the file's recipients (message status, downloads); POST {base}/download/resend?k=…&to=…
// sends one recipient's message again. The owner's link token is the credential, as for the
// download itself; limited per client address as the other anonymous link endpoints.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Services } from '../../app/services.js';
import { badRequest } from '../../platform/http/http-error.js';
import { successEnvelope } from '../../platform/http/presenters.js';
import { errors, json, successExample } from '../../platform/http/schemas.js';

export const statusExample = successExample('handlerDownloadList', 'USER1', {
  id: 1,
  name: 'report.pdf',
  recipients: [
    {
      id: 7,
      address: 'a***@example.com',
      channel: 'email',
      status: 'sent',
      reason: null,
      attempts: 1,
      lastAttempt: 1655159873000,
      downloads: { count: 1, complete: true, first: 1655160000000, last: 1655160000000 },
      revoked: false,
      expires: null,
      maxDownloads: 1,
      completeDownloads: 1,
    },
  ],
});
export const ownerErrors = errors({
  401: 'Missing k, or an unknown, revoked or retired link.',
  403: "A recipient's link: only the owner's shows delivery.",
});

const StatusQuery = Type.Object({
  k: Type.Optional(Type.String({ maxLength: 512 })),
});

const ResendQuery = Type.Object({
  k: Type.Optional(Type.String({ maxLength: 512 })),
  to: Type.Optional(Type.String({ maxLength: 254 })),
});

export const limit = { rateLimit: { max: 60, timeWindow: '1 minute' } };

/** The DeliveryStatus answer of a file: its recipients now, in the owner's envelope. */
export async function deliveryAnswer(
  services: Services,
  file: { id: number; name: string; owner_id: number },
) {
  const owner = await services.users.byId(file.owner_id);
  const recipients = (await services.tracking.recipientsOf([file.id])).get(file.id) ?? [];
  return successEnvelope('handlerDownloadList', owner?.name ?? null, {
    id: file.id,
    name: file.name,
    recipients,
  });
}

export const deliveryRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { tracking, recipients } = app.services;

  app.get(
    '/download/status',
    {
      schema: {
        tags: ['delivery'],
        summary: "(ext) Who was told about a file, and whether they downloaded it (the owner's link token)",
        querystring: StatusQuery,
        response: { 200: json('DeliveryStatus', 'Recipients of the file.', statusExample), ...ownerErrors },
      },
      config: limit,
    },
    async (request, reply) => {
      const { file } = await tracking.byOwnerToken(request.query.k);
      return reply.header('Cache-Control', 'no-store').send(await deliveryAnswer(app.services, file));
    },
  );

  app.post(
    '/download/resend',
    {
      schema: {
        tags: ['delivery'],
        summary: "(ext) Send one recipient's message again",
        querystring: ResendQuery,
        response: {
          200: json('DeliveryStatus', 'Sent again; the recipients now.', statusExample),
          ...ownerErrors,
          ...errors({
            404: 'Not a recipient of this file.',
            409: 'The previous message is still pending.',
            429: 'Within 60 s of the last one.',
          }),
        },
      },
      config: limit,
    },
    async (request, reply) => {
      const owned = await tracking.byOwnerToken(request.query.k);
      if (!request.query.to?.trim()) throw badRequest('to: recipient required');
      await recipients.resend(owned, request.query.to, request.ip);
      return reply.header('Cache-Control', 'no-store').send(await deliveryAnswer(app.services, owned.file));
    },
  );
};
