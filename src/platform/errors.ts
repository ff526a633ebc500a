// The domain's errors: what went wrong, in words any front door can use. They carry no protocol
// status and no header: the HTTP layer maps each kind to its answer in one place
// (src/platform/http/error-mapping.ts), the CLI prints the detail. `detail` is safe to show: it never reveals
// whether a user exists.

/** What kind of refusal or failure; each front door decides how to say it. */
export type ErrorKind =
  | 'invalid'
  | 'unauthorized'
  | 'forbidden'
  | 'not-found'
  | 'conflict'
  | 'gone'
  | 'too-large'
  | 'locked'
  | 'too-many'
  | 'checksum-mismatch'
  | 'unavailable';

/** What a front door needs beyond the kind and the detail. */
export interface ErrorFacts {
  /** When the same request may succeed again (too-many, locked, unavailable). */
  retryAfterSeconds?: number;
  /** conflict: the offset an upload stands at, which the client must resume from. */
  expectedOffset?: number;
}

/** Words for an error without a detail of its own (the same the HTTP envelope's description uses). */
const KIND_TEXT: Record<ErrorKind, string> = {
  invalid: 'Bad Request',
  unauthorized: 'Unauthorized',
  forbidden: 'Forbidden',
  'not-found': 'Not Found',
  conflict: 'Conflict',
  gone: 'Gone',
  'too-large': 'Payload Too Large',
  locked: 'Locked',
  'too-many': 'Too Many Requests',
  'checksum-mismatch': 'Checksum Mismatch',
  unavailable: 'Service Unavailable',
};

export class DomainError extends Error {
  constructor(
    readonly kind: ErrorKind,
    readonly detail?: string,
    readonly facts: ErrorFacts = {},
  ) {
    super(detail ?? KIND_TEXT[kind]);
    this.name = 'DomainError';
  }
}

export const invalid = (detail?: string) => new DomainError('invalid', detail);
export const unauthorized = (detail?: string) => new DomainError('unauthorized', detail);
export const forbidden = (detail?: string) => new DomainError('forbidden', detail);
export const notFound = (detail?: string) => new DomainError('not-found', detail);
/** `expectedOffset`: the offset an upload stands at, for a write that assumed another. */
export const conflict = (detail?: string, expectedOffset?: number) =>
  new DomainError('conflict', detail, expectedOffset === undefined ? {} : { expectedOffset });
export const gone = (detail?: string) => new DomainError('gone', detail);
export const tooLarge = (detail?: string) => new DomainError('too-large', detail);
export const locked = (detail: string, retryAfterSeconds: number) =>
  new DomainError('locked', detail, { retryAfterSeconds });
export const tooMany = (detail: string, retryAfterSeconds?: number) =>
  new DomainError('too-many', detail, retryAfterSeconds === undefined ? {} : { retryAfterSeconds });
export const checksumMismatch = (detail?: string) => new DomainError('checksum-mismatch', detail);
/** A service the request needs is out of reach or out of room: nothing changed. */
export const unavailableFor = (detail?: string, retryAfterSeconds?: number) =>
  new DomainError('unavailable', detail, retryAfterSeconds === undefined ? {} : { retryAfterSeconds });

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
  unavailableFor('the server has too many open files; the request changed nothing, retry shortly', 5);

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
 * is not one of them: CommitUnknownError, src/platform/sql/transaction.ts.)
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
  unavailableFor(
    'the database or the file store is unreachable; the request changed nothing, retry later',
    5,
  );

/** What a request that could not be recorded (full disk) answers: retry once space returns. */
export const outOfSpace = () =>
  unavailableFor('storage is full; the request changed nothing, retry later', 60);
