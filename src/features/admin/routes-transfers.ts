// (ext) GET {base}/admin/files and GET {base}/admin/files/{id}/timeline: every transfer, held or
// purged, and one file's story; DELETE {base}/admin/files/{id}: any file deleted now, as its owner
// can (docs/admin.md, "Transfers"). Behind the admin plugin's role check (the delete: admins only).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { currentUser } from '../../platform/http/auth-hooks.js';
import { errors, jsonOf, success, successExample } from '../../platform/http/schemas.js';
import { adminSchema, readErrors as reportErrors, sendUncached } from './routes-shared.js';

const HANDLER = 'handlerAdminFiles';
const text = (maxLength: number, description: string) =>
  Type.Optional(Type.String({ maxLength, description }));

const FilesQuery = Type.Object({
  user: text(254, 'Files whose owner or sender is this account (case-insensitive).'),
  state: Type.Optional(Type.Union([Type.Literal('area'), Type.Literal('backup'), Type.Literal('purged')])),
  q: text(255, 'Part of the name (case-insensitive).'),
  from: text(40, 'Created at or after: ISO 8601 or epoch milliseconds.'),
  to: text(40, 'Created before: ISO 8601 or epoch milliseconds.'),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, description: 'Default 50.' })),
  cursor: text(40, 'The `next` of the previous page.'),
});

const envelope = { ...success(HANDLER), user: Type.String({ description: 'The acting account.' }) };
const closed = { additionalProperties: false } as const;

const FilesPage = Type.Object(
  {
    ...envelope,
    files: Type.Array(Type.Ref('AdminTransfer')),
    next: Type.Union([Type.String(), Type.Null()]),
  },
  closed,
);

const Timeline = Type.Object(
  { ...envelope, file: Type.Ref('AdminTransfer'), timeline: Type.Array(Type.Ref('AdminTimelineEntry')) },
  closed,
);

const FileId = Type.Object({ id: Type.Integer({ minimum: 1, description: 'The file id.' }) });

const Deleted = Type.Object(
  {
    ...envelope,
    file: Type.Object(
      {
        id: Type.Integer(),
        name: Type.String(),
        owner: Type.Union([Type.String(), Type.Null()], { description: "The owning area's account." }),
        deleted: Type.Literal(true),
      },
      closed,
    ),
  },
  closed,
);

const fileExample = {
  id: 42,
  name: 'report.pdf',
  size: 52341,
  sha256: 'a'.repeat(64),
  state: 'area',
  owner: 'alice',
  sender: 'alice',
  created: '2026-11-27T13:36:22.123Z',
  expires: '2026-12-04T13:36:22.123Z',
  retired: null,
  purged: null,
  recipients: [{ address: 'bob@example.com', channel: 'email', status: 'sent', downloads: 1 }],
  downloads: 1,
};

const timelineExample = [
  {
    time: '2026-11-27T13:36:22.123Z',
    source: 'audit',
    event: 'upload',
    detail: { name: 'report.pdf', bytes: 52341, area: 'alice', sha256: 'a'.repeat(64) },
    user: 'alice',
    remote: '192.0.2.7',
    channel: null,
    status: null,
    attempts: null,
    lastError: null,
  },
  {
    time: '2026-11-27T13:36:22.123Z',
    source: 'outbox',
    event: 'file-link',
    detail: { outbox: 9, to: 'bob@example.com' },
    user: 'alice',
    remote: null,
    channel: 'email',
    status: 'sent',
    attempts: 1,
    lastError: null,
  },
];

const readErrors = reportErrors('A parameter that is not one (a bad date, state, limit or cursor).');

export const transferRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { transfers } = app.services.adminReports;

  app.get(
    '/files',
    {
      schema: adminSchema('(ext) Every file uploaded, held or purged, newest first', {
        querystring: FilesQuery,
        response: {
          200: jsonOf(
            FilesPage,
            'A page of transfers.',
            successExample(HANDLER, 'admin', { files: [fileExample], next: '42' }),
          ),
          ...readErrors,
        },
      }),
    },
    async (request, reply) => {
      const page = await transfers.list(request.query);
      return sendUncached(HANDLER, request, reply, { files: page.items, next: page.next });
    },
  );

  app.get(
    '/files/:id/timeline',
    {
      schema: adminSchema("(ext) A file's story: upload, messages, PINs, downloads, retirement, purge", {
        params: FileId,
        response: {
          200: jsonOf(
            Timeline,
            'The file and its timeline, in time order.',
            successExample(HANDLER, 'admin', { file: fileExample, timeline: timelineExample }),
          ),
          ...readErrors,
          ...errors({ 404: 'No file with this id was ever uploaded.' }),
        },
      }),
    },
    async (request, reply) => {
      const story = await transfers.timeline(request.params.id);
      return sendUncached(HANDLER, request, reply, story);
    },
  );

  app.delete(
    '/files/:id',
    {
      schema: adminSchema("(ext) Delete a file now: contents and every link gone, as its owner's link can", {
        params: FileId,
        response: {
          200: jsonOf(
            Deleted,
            'Deleted; every link to it answers as an expired one.',
            successExample(HANDLER, 'admin', {
              file: { id: 42, name: 'report.pdf', owner: 'alice', deleted: true },
            }),
          ),
          ...errors({
            400: 'An id that is not one.',
            401: 'No or wrong credentials.',
            403: 'Not an admin.',
            404: 'No such file, or already deleted or purged.',
          }),
        },
      }),
    },
    async (request, reply) => {
      const actor = currentUser(request).name;
      const file = await app.services.linkControl.deleteById(request.params.id, {
        remote: request.ip ?? null,
        actor,
        via: 'admin',
      });
      const owner = await app.services.users.byId(file.owner_id);
      const deleted = { id: file.id, name: file.name, owner: owner?.name ?? null, deleted: true as const };
      return sendUncached(HANDLER, request, reply, { file: deleted });
    },
  );
};
