// The one logger. Secrets never reach it: authorization headers are redacted by path, and URLs are
// passed through redactUrl so tokens, PINs and passwords in query strings are masked.
import { type Logger, pino } from 'pino';

export type { Logger };

const SECRET_PARAMS = new Set(['k', 'p', 'z', 'password', 'pin', 'token', 'access_token']);

export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const params = new URLSearchParams(url.slice(q + 1));
  for (const key of [...params.keys()])
    if (SECRET_PARAMS.has(key.toLowerCase())) params.set(key, '[REDACTED]');
  return `${url.slice(0, q)}?${params.toString().replaceAll('%5BREDACTED%5D', '[REDACTED]')}`;
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
