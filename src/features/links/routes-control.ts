// (ext) Taking back what was sent (docs/links.md), with the owner's link token as the credential
// (as GET /download/status): DELETE {base}/download/file?k= deletes the file now; POST
// {base}/download/revoke?k=&to= revokes one recipient's link; PATCH {base}/download/link?k=[&to=]
// with {expires, maxDownloads} changes expiry and download limit. A recipient's token gets 403;
// a deleted, revoked or exhausted link then answers as an expired one (401).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { invalid } from '../../platform/errors.js';
import { successEnvelope } from '../../platform/http/presenters.js';
import { errors, json, jsonOf, success, successExample } from '../../platform/http/schemas.js';
import { isoInstant } from '../../platform/time.js';
import { MAX_DOWNLOAD_LIMIT } from './link-control.js';
import { deliveryAnswer, limit, ownerErrors, statusExample } from './routes-delivery.js';

const OwnerQuery = Type.Object({ k: Type.Optional(Type.String({ maxLength: 512 })) });
const RecipientQuery = Type.Object({
  k: Type.Optional(Type.String({ maxLength: 512 })),
  to: Type.Optional(Type.String({ maxLength: 254 })),
});
// Checked by hand (linkChangeOf), not by type unions: the validator coerces between null, 0 and ""
// inside a union, so `maxDownloads: 0` became "no limit" and `null` a 0.
const LinkChangeBody = Type.Object(
  {
    expires: Type.Optional(
      Type.Unknown({ description: "ISO 8601 date or time; null (with `to`): back to the file's own." }),
    ),
    maxDownloads: Type.Optional(
      Type.Unknown({ description: `Whole number 1–${MAX_DOWNLOAD_LIMIT}, or null: no limit.` }),
    ),
  },
  { additionalProperties: false },
);

/** The change a PATCH body asks for; a value of another type is a 400. */
function linkChangeOf(body: { expires?: unknown; maxDownloads?: unknown } | undefined) {
  const { expires, maxDownloads } = body ?? {};
  if (expires !== undefined && expires !== null && typeof expires !== 'string')
    throw invalid('expires: an ISO 8601 date or time, or null');
  if (maxDownloads !== undefined && maxDownloads !== null && typeof maxDownloads !== 'number')
    throw invalid('maxDownloads: a whole number, or null');
  return { expiresAt: timeOf(expires), maxDownloads };
}

const Deleted = Type.Object(
  {
    ...success('handlerDownloadList'),
    user: Type.Optional(Type.String()),
    id: Type.Integer(),
    name: Type.String(),
    deleted: Type.Literal(true),
  },
  { additionalProperties: false },
);

/** An ISO 8601 date or time as ms, or null; anything else is a 400. */
function timeOf(value: string | null | undefined): number | null | undefined {
  if (value === undefined || value === null) return value;
  const at = isoInstant(value);
  if (!Number.isFinite(at)) throw invalid('expires: an ISO 8601 date or time');
  return at;
}

export const linkControlRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { tracking, linkControl, users } = app.services;
  const noStore = { 'Cache-Control': 'no-store' };

  app.delete(
    '/download/file',
    {
      schema: {
        tags: ['delivery'],
        summary: "(ext) Delete a file now: contents and every link gone (the owner's link token)",
        querystring: OwnerQuery,
        response: {
          200: jsonOf(
            Deleted,
            'Deleted.',
            successExample('handlerDownloadList', 'USER1', { id: 1, name: 'report.pdf', deleted: true }),
          ),
          ...ownerErrors,
          ...errors({ 404: 'Already deleted.' }),
        },
      },
      config: limit,
    },
    async (request, reply) => {
      const { file, ...rest } = await tracking.byOwnerToken(request.query.k);
      const owner = await users.byId(file.owner_id);
      await linkControl.deleteFile({ file, ...rest }, { remote: request.ip });
      const answer = { id: file.id, name: file.name, deleted: true as const };
      return reply.headers(noStore).send(successEnvelope('handlerDownloadList', owner?.name ?? null, answer));
    },
  );

  app.post(
    '/download/revoke',
    {
      schema: {
        tags: ['delivery'],
        summary: "(ext) Revoke one recipient's link; the others keep working",
        querystring: RecipientQuery,
        response: {
          200: json('DeliveryStatus', 'Revoked; the recipients now.', statusExample),
          ...ownerErrors,
          ...errors({ 404: 'Not a recipient of this file.' }),
        },
      },
      config: limit,
    },
    async (request, reply) => {
      const owned = await tracking.byOwnerToken(request.query.k);
      await linkControl.revoke(owned, request.query.to, { remote: request.ip });
      return reply.headers(noStore).send(await deliveryAnswer(app.services, owned.file));
    },
  );

  app.patch(
    '/download/link',
    {
      schema: {
        tags: ['delivery'],
        summary: "(ext) Change a link's expiry or download limit (one recipient's with `to`, else all)",
        querystring: RecipientQuery,
        body: LinkChangeBody,
        consumes: ['application/json'],
        response: {
          200: json('DeliveryStatus', 'Changed; the recipients now.', statusExample),
          ...ownerErrors,
          ...errors({ 404: 'Not a recipient of this file.', 409: 'The file is no longer in the area.' }),
        },
      },
      config: limit,
    },
    async (request, reply) => {
      const owned = await tracking.byOwnerToken(request.query.k);
      await linkControl.change(owned, request.query.to, linkChangeOf(request.body), { remote: request.ip });
      return reply.headers(noStore).send(await deliveryAnswer(app.services, owned.file));
    },
  );
};
