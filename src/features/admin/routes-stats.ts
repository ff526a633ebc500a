// (ext) GET {base}/admin/stats: uploads, downloads, senders, recipients, failed sign-ins, lockouts
// and notification failures per hour or day, computed by the database (docs/admin.md,
// "Statistics"). Behind the admin plugin's role check.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { currentUser } from '../../platform/http/auth-hooks.js';
import { successEnvelope } from '../../platform/http/presenters.js';
import { BASIC_OR_BEARER, errors, jsonOf, success, successExample } from '../../platform/http/schemas.js';
import { MAX_BUCKETS } from './stats-report.js';

const HANDLER = 'handlerAdminStats';
const time = (description: string) => Type.Optional(Type.String({ maxLength: 40, description }));

const StatsQuery = Type.Object({
  from: time('ISO 8601 or epoch milliseconds; down to a whole bucket. Default: 30 days before `to`.'),
  to: time('ISO 8601 or epoch milliseconds; up to a whole bucket. Default: the end of the current one.'),
  bucket: Type.Optional(
    Type.Union([Type.Literal('hour'), Type.Literal('day')], { description: 'Default day (UTC).' }),
  ),
});

const count = Type.Integer({ minimum: 0 });
const Stats = Type.Object(
  {
    ...success(HANDLER),
    user: Type.String({ description: 'The acting account.' }),
    bucket: Type.Union([Type.Literal('hour'), Type.Literal('day')]),
    from: Type.String({ description: 'Where the first bucket begins (ISO 8601, UTC).' }),
    to: Type.String({ description: 'Where the last one ends (ISO 8601, UTC).' }),
    series: Type.Array(Type.Ref('AdminStatsBucket'), {
      description: `Every bucket, at most ${MAX_BUCKETS}.`,
    }),
    totals: Type.Object(
      {
        users: count,
        files: Type.Integer({ minimum: 0, description: 'Files held now (area and backup).' }),
        bytes: Type.Integer({ minimum: 0, description: 'Their bytes.' }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

const bucketExample = {
  start: '2026-11-27T00:00:00.000Z',
  uploads: 120,
  uploadBytes: 7_340_032_000,
  downloads: 310,
  downloadBytes: 15_032_385_536,
  senders: 41,
  recipients: 97,
  failedSignIns: 6,
  lockouts: 1,
  notificationFailures: 0,
};

export const statsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { stats } = app.services.adminReports;

  app.get(
    '/stats',
    {
      schema: {
        tags: ['admin'],
        summary: '(ext) Activity per hour or day, and totals',
        security: BASIC_OR_BEARER,
        querystring: StatsQuery,
        response: {
          200: jsonOf(
            Stats,
            'Every bucket of the period (zeros included) and what is held now.',
            successExample(HANDLER, 'admin', {
              bucket: 'day',
              from: '2026-11-27T00:00:00.000Z',
              to: '2026-11-28T00:00:00.000Z',
              series: [bucketExample],
              totals: { users: 250, files: 5120, bytes: 412_316_860_416 },
            }),
          ),
          ...errors({
            400: `A bad date or bucket, from not before to, or more than ${MAX_BUCKETS} buckets.`,
            401: 'No or wrong credentials.',
            403: 'Not an auditor or admin.',
          }),
        },
      },
    },
    async (request, reply) => {
      const view = await stats.stats(request.query);
      return reply
        .header('Cache-Control', 'no-store')
        .send(successEnvelope(HANDLER, currentUser(request).name, view));
    },
  );
};
