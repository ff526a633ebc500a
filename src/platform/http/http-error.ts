// An HTTP answer with an error status: what the HTTP layer throws where the refusal is HTTP's own
// (request parsing, tus headers, connection limits). Domain services throw DomainError
// (src/platform/errors.ts), which error-mapping.ts turns into one of these; the error handler (app.ts) sends
// it as an envelope (or an OAuth error object on the token endpoint).
// 410, 412, 415, 423 and 460 (checksum mismatch) are the tus protocol's answers (routes/uploads.ts).
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
