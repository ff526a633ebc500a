// (ext) GET {base}/admin/audit: the audit search, as pages of JSON or the whole search as CSV
// streamed from the database (docs/admin.md, "Audit"). Behind the admin plugin's role check.
import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type TSchema, Type } from 'typebox';
import { currentUser } from '../../platform/http/auth-hooks.js';
import { successEnvelope } from '../../platform/http/presenters.js';
import { BASIC_OR_BEARER, errors, success, successExample } from '../../platform/http/schemas.js';
import { AUDIT_CSV_HEADER } from './audit-report.js';

const HANDLER = 'handlerAdminAudit';
const text = (maxLength: number, description?: string) =>
  Type.Optional(Type.String({ maxLength, ...(description && { description }) }));

export const AuditQuery = Type.Object({
  user: text(254, 'Rows whose user or actor is this account (case-insensitive).'),
  event: text(64, 'An event prefix: `login` takes `login.failed`.'),
  file: Type.Optional(Type.Integer({ minimum: 1, description: 'A file id.' })),
  outcome: Type.Optional(Type.Union([Type.Literal('ok'), Type.Literal('failed')])),
  from: text(40, 'ISO 8601 or epoch milliseconds, inclusive.'),
  to: text(40, 'ISO 8601 or epoch milliseconds, exclusive.'),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, description: 'Default 50.' })),
  cursor: text(40, 'The `next` of the previous page.'),
  format: Type.Optional(
    Type.Union([Type.Literal('json'), Type.Literal('csv')], {
      description: '`csv`: the whole search (limit and cursor aside) as text/csv, streamed.',
    }),
  ),
});

const AuditPage = Type.Object(
  {
    ...success(HANDLER),
    user: Type.String({ description: 'The acting account.' }),
    entries: Type.Array(Type.Ref('AdminAuditEntry')),
    next: Type.Union([Type.String(), Type.Null()], {
      description: 'The cursor of the next page; null on the last.',
    }),
  },
  { additionalProperties: false },
);

const entryExample = {
  id: 4711,
  time: '2026-11-27T13:36:22.123Z',
  event: 'login.failed',
  user: 'alice',
  actor: null,
  remote: '192.0.2.7',
  fileId: null,
  detail: 'wrong password',
};
const csvExample = `${AUDIT_CSV_HEADER.join(',')}\r\n4711,2026-11-27T13:36:22.123Z,login.failed,alice,,192.0.2.7,,wrong password\r\n`;

export const auditRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { audit } = app.services.adminReports;

  app.get(
    '/audit',
    {
      schema: {
        tags: ['admin'],
        summary: '(ext) Search the audit trail, newest first; `format=csv` exports the whole search',
        security: BASIC_OR_BEARER,
        querystring: AuditQuery,
        response: {
          200: {
            description: 'A page of entries, or (format=csv) the whole search as CSV.',
            content: {
              'application/json': {
                // Not inferred as the reply's type: the CSV answer is a stream.
                schema: AuditPage as TSchema,
                example: successExample(HANDLER, 'admin', { entries: [entryExample], next: '4711' }),
              },
              'text/csv': {
                schema: Type.String({ description: 'RFC 4180, header row, CRLF line ends, UTF-8.' }),
                example: csvExample,
              },
            },
          },
          ...errors({
            400: 'A parameter that is not one (a bad date, limit or cursor).',
            401: 'No or wrong credentials.',
            403: 'Not an auditor or admin.',
          }),
        },
      },
    },
    async (request, reply) => {
      const { format, limit, cursor, ...filter } = request.query;
      const acting = currentUser(request).name;
      if (format === 'csv') {
        // Checked before the first byte: a bad query is a 400, not a cut stream.
        const lines = audit.csv(filter);
        return reply
          .header('Content-Type', 'text/csv; charset=utf-8')
          .header('Content-Disposition', 'attachment; filename="audit.csv"')
          .header('Cache-Control', 'no-store')
          .send(Readable.from(lines, { objectMode: false }));
      }
      const page = await audit.list({ ...filter, limit, cursor });
      return reply
        .header('Cache-Control', 'no-store')
        .send(successEnvelope(HANDLER, acting, { entries: page.items, next: page.next }));
    },
  );
};
