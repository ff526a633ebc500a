// Upload, download, backup download and area lists (interface §4.2–4.4).

import type { IncomingMessage } from 'node:http';
import multipart, { type Multipart } from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type TSchema, Type } from 'typebox';
import type { ByteRange } from '../../platform/blobs/blob-store.js';
import { DomainError, isOutOfSpace } from '../../platform/errors.js';
import { currentUser, requireUser } from '../../platform/http/auth-hooks.js';
import { sendStoredFile } from '../../platform/http/download-response.js';
import { fileEntry } from '../../platform/http/file-entry.js';
import { AppError, badRequest } from '../../platform/http/http-error.js';
import { successEnvelope } from '../../platform/http/presenters.js';
import { detachedBody, discardRestOfBody } from '../../platform/http/request-body.js';
import {
  BASIC_OR_BEARER,
  contentTypeHeader,
  errors,
  fileEntryExample,
  json,
  successExample,
} from '../../platform/http/schemas.js';
import { parseRecipients } from '../links/recipients.js';
import type { RecipientStatus } from '../links/tracking.js';
import type { DownloadOutcome } from './download.js';
import type { FileService } from './file-service.js';
import type { FileWithLink } from './file-store.js';
import type { IncomingFile } from './upload-commit.js';
import { UPLOAD_PARAMETER_MAX_LENGTH, type UploadParameter } from './upload-limits.js';

const uploadParameter = (name: UploadParameter) =>
  Type.Optional(Type.String({ maxLength: UPLOAD_PARAMETER_MAX_LENGTH[name] }));

const UploadQuery = Type.Object({
  file: uploadParameter('file'),
  d: uploadParameter('d'),
  c: uploadParameter('c'),
  m: uploadParameter('m'),
  i: uploadParameter('i'),
} satisfies Record<UploadParameter, TSchema>);

const DownloadQuery = Type.Object({
  k: Type.Optional(Type.String({ maxLength: 512 })),
  lang: Type.Optional(Type.String({ maxLength: 8 })),
  p: Type.Optional(Type.String({ maxLength: 32 })),
  /** the portal's "give me the bytes" marker (docs/portal.md); ignored here */
  dl: Type.Optional(Type.String({ maxLength: 8 })),
});

const BackupQuery = Type.Object({
  z: Type.Optional(Type.String({ maxLength: 512 })),
  lang: Type.Optional(Type.String({ maxLength: 8 })),
  dl: Type.Optional(Type.String({ maxLength: 8 })),
});

const ListQuery = Type.Object({
  page: Type.String({ pattern: '^[1-9][0-9]{0,8}$' }),
});

/** A multipart parser's complaint as a 400; limits and our own errors keep their status. */
function malformed(err: unknown): Error {
  // Our own failure reaching the part's stream (a full disk: 503), not the client's framing.
  if (err instanceof AppError || err instanceof DomainError || isOutOfSpace(err)) return err as Error;
  const status = (err as { statusCode?: number }).statusCode;
  if (status !== undefined && status >= 400 && status < 500) return err as Error;
  return badRequest(`malformed multipart body: ${(err as Error).message}`);
}

/**
 * The most a multipart upload may send outside its files: a preamble, non-file fields (their 50 ×
 * 64 KiB, past which the parser truncates but still reads), part headers, an epilogue. Without it
 * the parser read whatever came there, gigabytes, and the upload still got its 200.
 */
const OUTSIDE_FILES_LIMIT = 4 * 1024 * 1024;

/**
 * Counts the bytes of a multipart body that arrive while no file part is being read (`inFile`,
 * set by the caller around each file); `tooMany` rejects (413) past OUTSIDE_FILES_LIMIT. Counted in
 * chunks as they arrive, so the edge of a file is off by at most a chunk.
 */
function bytesOutsideFiles(raw: IncomingMessage) {
  let outside = 0;
  let refuse: (err: AppError) => void = () => {};
  const tooMany = new Promise<never>((_resolve, reject) => {
    refuse = reject;
  });
  tooMany.catch(() => {}); // rejected while nobody waits on it: not an unhandled rejection
  const state = {
    inFile: false,
    tooMany,
    stop: () => raw.off('data', count),
  };
  function count(chunk: Buffer) {
    if (state.inFile) return;
    outside += chunk.length;
    if (outside <= OUTSIDE_FILES_LIMIT) return;
    state.stop();
    refuse(
      new AppError(413, `more than ${OUTSIDE_FILES_LIMIT} bytes of the multipart body are outside its files`),
    );
  }
  raw.on('data', count);
  return state;
}

const downloadList = (why: string) =>
  json('DownloadList', why, successExample('handlerDownloadList', 'USER1', { files: [fileEntryExample] }));

/** The bytes of a download: the file's own media type. */
const bytesResponse = (description: string) => ({
  description,
  content: { '*/*': { schema: { type: 'string', format: 'binary' } } },
});

const downloadResponses = {
  200: bytesResponse(
    'The file (Content-Disposition names it). The interface documents this as a Download list; the bytes are what is sent.',
  ),
  206: bytesResponse('One byte range (Range).'),
  304: { description: 'Not modified (If-None-Match / If-Modified-Since).', type: 'null' },
  ...errors({
    400: 'Missing token.',
    401: 'Unknown, expired or revoked token.',
    403: 'A recipient link without the right PIN, or a locked link.',
    416: 'Range not satisfiable.',
    500: 'Internal failure (or the stored contents are damaged).',
  }),
};

/** The plugin's app, with the TypeBox type provider (typed querystrings). */
type Api = Parameters<FastifyPluginAsyncTypebox>[0];

type BodyKind = 'multipart' | 'raw';

const notAnUploadBody = () =>
  badRequest('body must be multipart/form-data or application/octet-stream (Content-Type or Content_type)');

function bodyKind(request: FastifyRequest): BodyKind {
  if (request.isMultipart()) return 'multipart';
  if (!(request.headers['content-type'] ?? '').toLowerCase().startsWith('application/octet-stream'))
    throw notAnUploadBody();
  // Without either, HTTP reads no body at all: the bytes sent would be taken for a next request.
  if (request.headers['content-length'] === undefined && request.headers['transfer-encoding'] === undefined)
    throw new AppError(411, 'Content-Length (or chunked Transfer-Encoding) is required', {
      Connection: 'close',
    });
  return 'raw';
}

/**
 * The files of the request body. A body that cannot be parsed (no or an empty boundary, truncated
 * framing, a part cut short) is the client's fault: 400, whatever the parser threw.
 */
async function* incoming(
  request: FastifyRequest,
  kind: BodyKind,
  bodyErrors: Set<unknown>,
): AsyncGenerator<IncomingFile> {
  // No file is longer than the whole body: a declared Content-Length bounds each (chunked: unknown).
  const length = request.headers['content-length'];
  const sizeBound = length !== undefined && /^\d{1,15}$/.test(length) ? Number(length) : undefined;
  if (kind === 'raw') {
    yield { filename: undefined, stream: detachedBody(request.raw), sizeBound, declaredSize: sizeBound };
    return;
  }
  let parts: AsyncIterator<Multipart>;
  try {
    parts = request.parts()[Symbol.asyncIterator]();
  } catch (err) {
    throw malformed(err);
  }
  // (Counted from here: the parser is now reading the body, and sees every byte counted.)
  const outside = bytesOutsideFiles(request.raw);
  try {
    for (;;) {
      let next: IteratorResult<Multipart>;
      try {
        next = await Promise.race([parts.next(), outside.tooMany]);
      } catch (err) {
        throw malformed(err);
      }
      if (next.done) return;
      const part = next.value;
      if (part.type !== 'file') continue;
      // The parser fails the part's stream on bad framing, possibly before anyone reads it, by
      // destroying it or only by emitting an error; whoever reads the part rethrows that error.
      part.file.on('error', (err) => bodyErrors.add(err));
      // (It may have failed already: a body that arrived whole is parsed before this line runs.)
      if (part.file.errored) bodyErrors.add(part.file.errored);
      outside.inFile = true;
      yield { filename: part.filename || undefined, stream: part.file, sizeBound };
      outside.inFile = false;
    }
  } finally {
    outside.stop();
  }
}

/** POST /upload: every parameter checked, then the body's files stored together. */
function uploadRoute(app: Api) {
  const { files, config, notify, tracking } = app.services;
  app.post(
    '/upload',
    {
      schema: {
        tags: ['files'],
        summary: "Upload files to your area or another user's, optionally announced to recipients",
        description:
          'Body: multipart/form-data (any part name; each file part is stored under its filename) or ' +
          'application/octet-stream (named by `file`). Every parameter is checked before a byte of the body is read.',
        security: BASIC_OR_BEARER,
        consumes: ['multipart/form-data', 'application/octet-stream'],
        headers: contentTypeHeader('multipart/form-data'),
        querystring: UploadQuery,
        response: {
          200: downloadList('Download list of the stored files.'),
          ...errors({
            400: 'Invalid parameters or body.',
            401: 'User does not exist or password invalid.',
            413: 'Larger than REMESSA_MAX_FILE_SIZE.',
            500: 'Internal failure.',
          }),
        },
      },
      preHandler: [requireUser, app.uploadSlot],
      bodyLimit: config.maxFileSize,
      config: {
        keyScope: 'upload',
        streamingBody: {
          types: ['multipart/form-data', 'application/octet-stream'],
          refuse: notAnUploadBody,
        },
      },
    },
    async (request) => {
      const uploader = currentUser(request);
      const q = request.query;
      // Everything about the request is checked before a byte of the body is read.
      const owner = await files.destination(uploader, q.d);
      const recipients = parseRecipients(q.m, q.c);
      const kind = bodyKind(request);
      const bodyErrors = new Set<unknown>();
      const storedBefore = notify.storedCount;
      let stored: Awaited<ReturnType<typeof files.upload>>;
      try {
        stored = await files.upload(
          { uploader, owner, queryName: q.file, message: q.i ?? null, remote: request.ip, recipients },
          incoming(request, kind, bodyErrors),
        );
      } catch (err) {
        discardRestOfBody(request.raw);
        throw bodyErrors.has(err) ? malformed(err) : err;
      }
      // Messages and webhook events were committed with the files: deliver them now. (The count
      // is this instance's; another request's message meanwhile only makes this kick redundant.)
      if (notify.storedCount !== storedBefore) notify.kick();
      // Recipients' delivery status exists only for files announced to someone in this request.
      const status = recipients
        ? await tracking.recipientsOf(stored.map((s) => s.file.id))
        : new Map<number, RecipientStatus[]>();
      return successEnvelope('handlerDownloadList', uploader.name, {
        files: stored.map((s) => fileEntry(config.baseUrl, uploader.lang, s, status.get(s.file.id))),
      });
    },
  );
}

/** Sends a found file; its audit row is begun before the first byte and finished after the last. */
async function serve(files: FileService, request: FastifyRequest, reply: FastifyReply, found: FileWithLink) {
  // The audit row is committed before the first byte; the outcome is added once it is known.
  const begun: { row: number; range: ByteRange | null }[] = [];
  const blob = files.blobAccess(found.file, request.ip);
  let outcome: DownloadOutcome;
  try {
    outcome = await sendStoredFile(request, reply, found.file, blob, async (range) => {
      begun.push({ row: await files.downloadStarting(found, range, request.ip), range });
    });
  } catch (err) {
    // Begun, then failed before the body (the blob would not open): no byte reached the client.
    for (const { row, range } of begun)
      await files
        .downloadFinished(found, row, { complete: false, bytes: 0, range }, request.ip)
        .catch(() => {});
    throw err;
  }
  for (const { row } of begun) {
    try {
      await files.downloadFinished(found, row, outcome, request.ip);
    } catch (err) {
      // The response is over. Until the outcome is written the row says unknown; with the
      // database out of reach, the service tries again (FileService.retryBookkeeping).
      request.log.warn({ err }, 'after the download: bookkeeping failed');
    }
  }
}

/** GET/HEAD /download/file and /download/file/backup: a file by its link token. */
function downloadRoutes(app: Api) {
  const { files, secureLinks } = app.services;

  // GET and HEAD share a handler; an explicit HEAD keeps our Content-Length (Fastify's generated
  // HEAD route would read the whole file and answer a length of 0).
  app.route({
    method: ['GET', 'HEAD'],
    url: '/download/file',
    exposeHeadRoute: false,
    schema: {
      tags: ['files'],
      summary: 'Download a file by its link token (browsers get the landing page)',
      querystring: DownloadQuery,
      response: downloadResponses,
    },
    handler: async (request, reply) => {
      const found = await files.resolve(request.query.k, 'area');
      await secureLinks.gate(found, request.query.p, 'area', request.ip);
      await serve(files, request, reply, found);
      return reply;
    },
  });

  app.route({
    method: ['GET', 'HEAD'],
    url: '/download/file/backup',
    exposeHeadRoute: false,
    schema: {
      tags: ['files'],
      summary: 'Download a file from the backup area',
      querystring: BackupQuery,
      response: downloadResponses,
    },
    handler: async (request, reply) => {
      const found = await files.resolve(request.query.z, 'backup');
      await secureLinks.gate(found, undefined, 'backup', request.ip);
      await serve(files, request, reply, found);
      return reply;
    },
  });
}

/** (ext) GET /download/list and /download/list/backup: one page of an area. */
function listRoutes(app: Api) {
  const { files, config, tracking } = app.services;
  for (const [path, area] of [
    ['/download/list', 'area'],
    ['/download/list/backup', 'backup'],
  ] as const) {
    const schema = {
      tags: ['files'],
      summary: `(ext) List your ${area === 'area' ? 'area' : 'backup area'}, 100 entries a page`,
      security: BASIC_OR_BEARER,
      querystring: ListQuery,
      response: {
        200: downloadList('One page of files, oldest first.'),
        ...errors({ 400: 'Missing or invalid page.', 401: 'User does not exist or password invalid.' }),
      },
    };
    app.get(path, { schema, preHandler: requireUser, config: { keyScope: 'download' } }, async (request) => {
      const user = currentUser(request);
      const page = Number(request.query.page);
      const rows = await files.list(user, area, page);
      const status = await tracking.recipientsOf(rows.map((r) => r.file.id));
      return successEnvelope('handlerDownloadList', user.name, {
        files: rows.map((r) => fileEntry(config.baseUrl, user.lang, r, status.get(r.file.id))),
      });
    });
  }
}

export const fileRoutes: FastifyPluginAsyncTypebox = async (app) => {
  await app.register(multipart, {
    limits: {
      fileSize: app.services.config.maxFileSize,
      files: 100,
      parts: 200,
      fields: 50,
      fieldSize: 64 * 1024,
      headerPairs: 100,
    },
  });
  // A raw body (an extension of the interface) is never buffered: the route streams request.raw itself
  // (detachedBody), so the parser only has to let the request through.
  app.addContentTypeParser('application/octet-stream', (_request, _payload, done) => done(null, undefined));

  uploadRoute(app);
  downloadRoutes(app);
  listRoutes(app);
};
