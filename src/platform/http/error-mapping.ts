// The one place a domain error becomes an HTTP answer: its status, the headers a client acts on
// (Retry-After, tus's Upload-Offset) and the detail of the envelope. Everything under src/platform/http/
// that meets a service's error goes through here (the error handler in app.ts, mostly).
import { DomainError, type ErrorKind } from '../errors.js';
import { AppError, type ErrorStatus } from './http-error.js';

const STATUS: Record<ErrorKind, ErrorStatus> = {
  invalid: 400,
  unauthorized: 401,
  forbidden: 403,
  'not-found': 404,
  conflict: 409,
  gone: 410,
  'too-large': 413,
  // tus: another request holds the upload.
  locked: 423,
  'too-many': 429,
  // tus's checksum extension.
  'checksum-mismatch': 460,
  unavailable: 503,
};

/** The HTTP answer to a domain error. */
export function toHttpError(err: DomainError): AppError {
  const headers: Record<string, string> = {};
  const { retryAfterSeconds, expectedOffset } = err.facts;
  if (retryAfterSeconds !== undefined) headers['Retry-After'] = String(retryAfterSeconds);
  // tus: a PATCH at the wrong offset learns where to resume.
  if (expectedOffset !== undefined) headers['Upload-Offset'] = String(expectedOffset);
  return new AppError(STATUS[err.kind], err.detail, headers);
}

/** The HTTP status an error answers with, when it is one the server meant to give. */
export function httpStatusOf(err: unknown): ErrorStatus | undefined {
  if (err instanceof AppError) return err.status;
  if (err instanceof DomainError) return STATUS[err.kind];
  return undefined;
}

/**
 * How the audit log names an upload's failure: the status it answered and its detail, as it
 * always has (an operator reads "413 file larger than …"); anything else is an internal error.
 */
export function failureText(err: unknown): string {
  const answer = err instanceof DomainError ? toHttpError(err) : err;
  return answer instanceof AppError ? `${answer.status} ${answer.detail ?? ''}`.trim() : 'internal error';
}
