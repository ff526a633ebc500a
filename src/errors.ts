// The one error type. Domain services throw AppError; the HTTP layer maps it to an envelope (or an
// OAuth error object on the token endpoint). `detail` is safe to show: it never reveals whether a
// user exists.
// 410, 412, 415, 423 and 460 (checksum mismatch) are the tus protocol's answers (src/http/routes/uploads.ts).
export type ErrorStatus =
  | 400
  | 401
  | 403
  | 404
  | 405
  | 408
  | 409
  | 410
  | 411
  | 412
  | 413
  | 415
  | 416
  | 417
  | 423
  | 429
  | 460
  | 500
  | 503;

export const STATUS_TEXT: Record<ErrorStatus, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  411: 'Length Required',
  412: 'Precondition Failed',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  416: 'Range Not Satisfiable',
  417: 'Expectation Failed',
  423: 'Locked',
  429: 'Too Many Requests',
  460: 'Checksum Mismatch',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export class AppError extends Error {
  constructor(
    readonly status: ErrorStatus,
    readonly detail?: string,
    /** Extra response headers, e.g. WWW-Authenticate or Retry-After. */
    readonly headers: Record<string, string> = {},
  ) {
    super(detail ?? STATUS_TEXT[status]);
    this.name = 'AppError';
  }
}

export const badRequest = (detail?: string) => new AppError(400, detail);
export const unauthorized = (detail?: string, headers?: Record<string, string>) =>
  new AppError(401, detail, headers);
export const forbidden = (detail?: string) => new AppError(403, detail);

/** Errors of a full disk or database, in either dialect: the request fails cleanly and may be retried. */
export function isOutOfSpace(err: unknown): boolean {
  const e = err as { code?: unknown } | null;
  // ENOSPC / EDQUOT: the file system; SQLITE_FULL: SQLite; 53100 disk_full: PostgreSQL.
  return (
    e !== null &&
    typeof e === 'object' &&
    (e.code === 'ENOSPC' || e.code === 'EDQUOT' || e.code === 'SQLITE_FULL' || e.code === '53100')
  );
}

/** The process (EMFILE) or the system (ENFILE) has no descriptor left to open a file or socket. */
export function isOutOfDescriptors(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'EMFILE' || code === 'ENFILE';
}

/** What a request that could not open a file or connection answers: nothing changed, retry soon. */
export const outOfDescriptors = () =>
  new AppError(503, 'the server has too many open files; the request changed nothing, retry shortly', {
    'Retry-After': '5',
  });

/** Network errors reaching a service a request needs (the database, S3). */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'EAI_AGAIN',
]);

/**
 * Errors of a database or object store that is unreachable or refusing work for now: a request
 * that met one changed nothing it acknowledged and may be retried. (A commit whose answer was lost
 * is not one of them: CommitUnknownError, src/db/transaction.ts.)
 */
export function isUnavailable(err: unknown): boolean {
  if (err === null || typeof err !== 'object') return false;
  const e = err as { code?: unknown; message?: unknown; $metadata?: { httpStatusCode?: number } };
  if (typeof e.code === 'string') {
    if (UNREACHABLE.has(e.code)) return true;
    // PostgreSQL: class 08 (connection exception), 57P01–57P03 (shutting down, cannot connect now).
    if (/^08[0-9A-Z]{3}$|^57P0[123]$/.test(e.code)) return true;
  }
  // S3 answering 503 (SlowDown, ServiceUnavailable) after the SDK's own retries, or not answering
  // at all: no connection, or no byte, within the bounds of config.ts (the SDK's TimeoutError).
  if (e.$metadata?.httpStatusCode === 503 || (e as { name?: unknown }).name === 'TimeoutError') return true;
  // node-postgres says these in words only.
  return (
    typeof e.message === 'string' &&
    /^Connection terminated|^timeout exceeded when trying to connect/.test(e.message)
  );
}

export const unavailable = () =>
  new AppError(
    503,
    'the database or the file store is unreachable; the request changed nothing, retry later',
    {
      'Retry-After': '5',
    },
  );

/** What a request that could not be recorded (full disk) answers: retry once space returns. */
export const outOfSpace = () =>
  new AppError(503, 'storage is full; the request changed nothing, retry later', { 'Retry-After': '60' });
