// The one logger. Secrets never reach it: authorization headers are redacted by path, and URLs are
// passed through redactUrl so tokens, PINs and passwords in query strings (by name) and anything
// shaped like a token anywhere in the URL are masked.
import { type Logger, pino } from 'pino';

export type { Logger };

// t: an upload request's link token.
const SECRET_PARAMS = new Set(['k', 'p', 'z', 't', 'password', 'pin', 'token', 'access_token']);

/**
 * Values that look like secrets wherever they stand (path, odd parameter spellings such as `k%00=`
 * or `;k=`): JWTs, and runs of 32+ base64url characters (link, change and bearer tokens are 43).
 */
const SECRET_SHAPES = /eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*|[A-Za-z0-9_-]{32,}/g;

/** The user-info of an absolute-form target (`http://user:password@host/…`). */
const USER_INFO = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/?#]*@/;

export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  let out = url.replace(USER_INFO, '$1[REDACTED]@');
  if (q >= 0) {
    const params = new URLSearchParams(url.slice(q + 1));
    for (const key of [...params.keys()])
      if (SECRET_PARAMS.has(key.toLowerCase())) params.set(key, '[REDACTED]');
    out = `${out.slice(0, out.indexOf('?'))}?${params.toString().replaceAll('%5BREDACTED%5D', '[REDACTED]')}`;
  }
  return out.replace(SECRET_SHAPES, '[REDACTED]');
}

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      redact: {
        paths: [
          'req.headers.authorization',
          'headers.authorization',
          'password',
          '*.password',
          'pin',
          '*.pin',
          'token',
          '*.token',
        ],
        censor: '[REDACTED]',
      },
    },
    destination ?? process.stdout,
  );
}
