// Resumable uploads: the tus 1.0 protocol at {base_url}/uploads (docs/decisions.md for
// why these are our own handlers rather than @tus/server). Core, creation, creation-with-upload,
// termination, expiration and checksum (sha256). The work is UploadService's; this file only
// speaks the protocol: headers in, headers out.
import type { IncomingMessage } from 'node:http';
import { finished, PassThrough, type Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { currentUser, keyScopeOfRoutes, requireUser } from '../../platform/http/auth-hooks.js';
import { httpStatusOf } from '../../platform/http/error-mapping.js';
import { fileEntry } from '../../platform/http/file-entry.js';
import { AppError, badRequest } from '../../platform/http/http-error.js';
import { successEnvelope } from '../../platform/http/presenters.js';
import {
  BASIC_OR_BEARER,
  errors,
  fileEntryExample,
  json,
  successExample,
} from '../../platform/http/schemas.js';
import type { UploadRow } from '../../platform/sql/schema.js';
import { userOrRequest } from './routes-access.js';
import type { UploadMetadata } from './upload-metadata.js';
import type { Checksum } from './upload-service.js';

// openapi.json: the tus protocol's answers carry headers, not bodies; errors are envelopes.
const tusErrors = errors({
  400: 'Bad Upload-Length, Upload-Metadata or Upload-Offset.',
  401: 'No or wrong credentials (or an unknown request link).',
  403: "A request's PIN missing or wrong.",
  404: 'No such upload (or not yours).',
  409: "Upload-Offset does not match what the server has; a request's file limit reached.",
  410: 'The upload expired, or its request is closed or expired ("request closed").',
  412: 'Tus-Resumable is not 1.0.0.',
  413: "Larger than REMESSA_MAX_FILE_SIZE or than a request's limits.",
});
const noBody = (description: string) => ({ description, type: 'null' });
const tusDoc = (summary: string, response: Record<string, unknown>, auth = true) => ({
  tags: ['uploads'],
  summary: `(ext) ${summary}`,
  ...(auth ? { security: BASIC_OR_BEARER } : {}),
  response,
});

import { bodyEndedEarly, discardRestOfBody } from '../../platform/http/request-body.js';

const TUS_VERSION = '1.0.0';
const EXTENSIONS = 'creation,creation-with-upload,termination,expiration,checksum';
const OFFSET_TYPE = 'application/offset+octet-stream';

const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });

function header(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** A non-negative whole number header, or 400. */
function wholeNumber(request: FastifyRequest, name: string): number {
  const raw = header(request, name);
  if (raw === undefined || !/^\d{1,16}$/.test(raw)) throw badRequest(`${name} must be a whole number`);
  return Number(raw);
}

/** `key base64,key base64,…` (a key alone means an empty value); unknown keys are ignored. */
export function parseMetadata(raw: string | undefined): UploadMetadata {
  // A Map: keys such as `constructor` or `__proto__` are only keys (an object has them already).
  const out = new Map<string, string>();
  if (!raw || raw.trim() === '') return {};
  if (raw.length > 16 * 1024) throw badRequest('Upload-Metadata is too long');
  for (const pair of raw.split(',')) {
    const [key, value, extra] = pair.trim().split(' ');
    if (!key || extra !== undefined || (value !== undefined && !/^[A-Za-z0-9+/]*={0,2}$/.test(value)))
      throw badRequest('Upload-Metadata: malformed pair');
    if (out.has(key)) throw badRequest(`Upload-Metadata: ${key} given twice`);
    out.set(key, value === undefined ? '' : Buffer.from(value, 'base64').toString('utf8'));
  }
  const [filename, d, m, c, i, req, pin] = ['filename', 'd', 'm', 'c', 'i', 'request', 'pin'].map((k) =>
    out.get(k),
  );
  return Object.fromEntries(
    Object.entries({ filename, d, m, c, i, request: req, pin }).filter(([, v]) => v !== undefined),
  ) as UploadMetadata;
}

/** `Upload-Checksum: sha256 <base64>`; other algorithms are refused (400, as the protocol says). */
function parseChecksum(raw: string | undefined): Checksum | null {
  if (raw === undefined) return null;
  const m = /^(\S+) ([A-Za-z0-9+/]+={0,2})$/.exec(raw.trim());
  if (!m) throw badRequest('Upload-Checksum: malformed');
  if (m[1]!.toLowerCase() !== 'sha256') throw badRequest('Upload-Checksum: only sha256 is supported');
  const digest = Buffer.from(m[2]!, 'base64');
  if (digest.length !== 32) throw badRequest('Upload-Checksum: a sha256 digest is 32 bytes');
  return { sha256: digest.toString('hex') };
}

/**
 * The PATCH body. A connection that drops mid-body ends this stream quietly: the bytes that did
 * arrive are kept and the client resumes after them (tus core). With a checksum the PATCH is
 * all-or-nothing, so a cut fails it instead.
 */
function bodyUntilCut(req: IncomingMessage, keepPartial: boolean): Readable {
  const body = new PassThrough({ highWaterMark: 64 * 1024 });
  body.on('error', () => {});
  req.pipe(body);
  finished(req, (err) => {
    if (!err || body.destroyed || body.writableEnded) return;
    if (keepPartial) {
      req.unpipe(body);
      body.end();
    } else body.destroy(req.errored instanceof AppError ? req.errored : bodyEndedEarly());
  });
  return body;
}

/** The plugin's app, with the TypeBox type provider (typed params). */
type Api = Parameters<FastifyPluginAsyncTypebox>[0];

// Upload bytes come only as OFFSET_TYPE (a creation request may carry the first ones).
const tusBody = {
  types: [OFFSET_TYPE],
  refuse: () => new AppError(415, `Content-Type must be ${OFFSET_TYPE}`),
};

async function checkVersion(request: FastifyRequest, reply: FastifyReply) {
  if (header(request, 'tus-resumable') !== TUS_VERSION) {
    reply.header('Tus-Version', TUS_VERSION);
    throw new AppError(412, `Tus-Resumable must be ${TUS_VERSION}`);
  }
}
const guards = [checkVersion, userOrRequest];
/** The guards of a request that carries upload bytes: also an upload slot. */
const uploading = (app: Api) => [...guards, app.uploadSlot];

// Path-absolute, so that a client reaching us through any proxy or address stays on that route
// (tus clients resolve it against the creation URL).
const location = (apiPath: string, id: string) => `${apiPath}/uploads/${id}`;

function expires(reply: FastifyReply, row: UploadRow) {
  if (row.file_id === null) reply.header('Upload-Expires', new Date(row.expires_at).toUTCString());
}

async function patch(
  { uploads, notify }: Api['services'],
  request: FastifyRequest,
  id: string,
  offset: number,
): Promise<UploadRow> {
  const user = request.user;
  const checksum = parseChecksum(header(request, 'upload-checksum'));
  const body = bodyUntilCut(request.raw, checksum === null);
  try {
    const socket = request.raw.socket;
    const row = await uploads.append(user, id, offset, body, checksum, request.ip, () => socket.bytesRead);
    if (row.file_id !== null) notify.kick(); // its messages and events were committed with it
    return row;
  } catch (err) {
    discardRestOfBody(request.raw);
    throw err;
  }
}

/** OPTIONS /uploads and /uploads/:id: what this server supports (no credentials needed). */
function optionsRoutes(app: Api) {
  const { config } = app.services;
  app.options(
    '/uploads',
    {
      schema: tusDoc(
        'tus: what this server supports',
        // A malformed request (a transfer coding other than chunked) is still an envelope.
        { 204: noBody('Tus-Version, Tus-Extension, Tus-Max-Size.'), ...errors({}) },
        false,
      ),
    },
    async (_request, reply) => {
      reply
        .code(204)
        .header('Tus-Version', TUS_VERSION)
        .header('Tus-Extension', EXTENSIONS)
        .header('Tus-Max-Size', String(config.maxFileSize))
        .header('Tus-Checksum-Algorithm', 'sha256');
    },
  );
  app.options(
    '/uploads/:id',
    {
      schema: tusDoc(
        'tus: what this server supports',
        { 204: noBody('Tus-Version, Tus-Extension.'), ...errors({}) },
        false,
      ),
    },
    async (_request, reply) => {
      reply.code(204).header('Tus-Version', TUS_VERSION).header('Tus-Extension', EXTENSIONS);
    },
  );
}

/** POST /uploads: creation and creation-with-upload. */
function creationRoute(app: Api) {
  const { uploads, config } = app.services;
  app.post(
    '/uploads',
    {
      schema: tusDoc('tus: create a resumable upload (creation, creation-with-upload)', {
        201: noBody('Created: Location names the upload; Upload-Offset when a body came with it.'),
        ...tusErrors,
      }),
      preHandler: uploading(app),
      bodyLimit: config.maxFileSize,
      config: { streamingBody: tusBody },
    },
    async (request, reply) => {
      const user = request.user;
      if (header(request, 'upload-defer-length') !== undefined)
        throw badRequest('Upload-Defer-Length is not supported: send Upload-Length');
      let row: UploadRow;
      try {
        const length = wholeNumber(request, 'upload-length');
        row = await uploads.create(
          user,
          parseMetadata(header(request, 'upload-metadata')),
          length,
          request.ip,
        );
      } catch (err) {
        discardRestOfBody(request.raw);
        throw err;
      }
      const withBody = (header(request, 'content-type') ?? '').toLowerCase().startsWith(OFFSET_TYPE);
      reply.code(201).header('Location', location(config.apiPath, row.id));
      if (withBody) {
        // creation-with-upload: the upload exists whatever happens to its first bytes.
        try {
          row = await patch(app.services, request, row.id, 0);
        } catch (err) {
          const status = httpStatusOf(err);
          if (status === undefined || status >= 500) throw err;
          row = (await uploads.get(user, row.id).catch(() => row)) as UploadRow;
        }
        reply.header('Upload-Offset', String(row.received));
      }
      expires(reply, row);
      return reply.send();
    },
  );
}

/** HEAD /uploads/:id: how much the server has. */
function offsetRoute(app: Api) {
  const { uploads } = app.services;
  app.route({
    method: 'HEAD',
    url: '/uploads/:id',
    // A HEAD-only route is left out of openapi.json unless asked for.
    config: { swagger: { exposeHeadRoute: true } },
    schema: {
      ...tusDoc('tus: how much the server has (Upload-Offset)', {
        200: noBody('Upload-Offset and Upload-Length.'),
        ...tusErrors,
      }),
      params: IdParams,
    },
    preHandler: guards,
    handler: async (request, reply) => {
      const row = await uploads.status(request.user, request.params.id, request.ip);
      reply
        .code(200)
        .header('Cache-Control', 'no-store')
        .header('Upload-Offset', String(row.received))
        .header('Upload-Length', String(row.length));
      expires(reply, row);
      return reply.send();
    },
  });
}

/** PATCH /uploads/:id: bytes appended at Upload-Offset. */
function appendRoute(app: Api) {
  const { config } = app.services;
  app.patch(
    '/uploads/:id',
    {
      schema: {
        ...tusDoc('tus: append bytes at Upload-Offset (application/offset+octet-stream)', {
          204: noBody('Appended: the new Upload-Offset; the file is stored once the last byte is in.'),
          ...tusErrors,
        }),
        params: IdParams,
      },
      preHandler: uploading(app),
      bodyLimit: config.maxFileSize,
      config: { streamingBody: tusBody },
    },
    async (request, reply) => {
      if (!(header(request, 'content-type') ?? '').toLowerCase().startsWith(OFFSET_TYPE)) {
        discardRestOfBody(request.raw);
        throw new AppError(415, `Content-Type must be ${OFFSET_TYPE}`);
      }
      let offset: number;
      try {
        offset = wholeNumber(request, 'upload-offset');
      } catch (err) {
        discardRestOfBody(request.raw);
        throw err;
      }
      const row = await patch(app.services, request, request.params.id, offset);
      reply.code(204).header('Upload-Offset', String(row.received));
      expires(reply, row);
      return reply.send();
    },
  );
}

/** DELETE /uploads/:id: termination. */
function terminationRoute(app: Api) {
  const { uploads } = app.services;
  app.delete(
    '/uploads/:id',
    {
      schema: {
        ...tusDoc('tus: abandon an upload (termination)', { 204: noBody('Gone.'), ...tusErrors }),
        params: IdParams,
      },
      preHandler: guards,
    },
    async (request, reply) => {
      await uploads.terminate(request.user, request.params.id);
      return reply.code(204).send();
    },
  );
}

/**
 * GET /uploads/:id (ext): the finished upload as POST /upload would have answered it, for its
 * linkURL. Plain API clients may leave out Tus-Resumable here: this is not a tus request.
 */
function resultRoute(app: Api) {
  const { uploads, config, tracking } = app.services;
  app.get(
    '/uploads/:id',
    {
      schema: {
        ...tusDoc('The stored file of a finished upload, as a download list', {
          200: json(
            'DownloadList',
            'The file entry.',
            successExample('handlerDownloadList', 'USER1', { files: [fileEntryExample] }),
          ),
          ...tusErrors,
        }),
        params: IdParams,
      },
      preHandler: requireUser,
    },
    async (request) => {
      const user = currentUser(request);
      const stored = await uploads.result(user, request.params.id, request.ip);
      const status = await tracking.recipientsOf([stored.file.id]);
      return successEnvelope('handlerDownloadList', user.name, {
        files: [fileEntry(config.baseUrl, user.lang, stored, status.get(stored.file.id))],
      });
    },
  );
}

export const uploadRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.addContentTypeParser(OFFSET_TYPE, (_request, _payload, done) => done(null, undefined));

  // Every answer carries the protocol version (OPTIONS included: harmless, and simpler).
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('Tus-Resumable', TUS_VERSION);
    return payload;
  });

  keyScopeOfRoutes(app, () => 'upload');
  optionsRoutes(app);
  creationRoute(app);
  offsetRoute(app);
  appendRoute(app);
  terminationRoute(app);
  resultRoute(app);
};
