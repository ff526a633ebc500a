// The security headers every answer carries, Fastify's (app.ts, onSend) and those written straight
// on the socket when Fastify cannot answer (guards/raw-answers.ts).
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
};

/** Sources a page may load, by kind; a kind not listed loads nothing (default-src 'none'). */
export interface CspSources {
  scripts?: readonly string[];
  styles?: readonly string[];
  images?: readonly string[];
  connect?: readonly string[];
  forms?: readonly string[];
  base?: readonly string[];
}

/**
 * A Content-Security-Policy that denies everything but the sources given, and framing always.
 * The one place the policies are spelled, so the API's, the docs' and the portal's stay alike.
 */
export function csp(sources: CspSources = {}): string {
  const directives: [string, readonly string[] | undefined][] = [
    ['script-src', sources.scripts],
    ['style-src', sources.styles],
    ['img-src', sources.images],
    ['connect-src', sources.connect],
    ['form-action', sources.forms],
    ['base-uri', sources.base],
  ];
  return [
    "default-src 'none'",
    ...directives.flatMap(([name, list]) => (list ? [`${name} ${list.join(' ')}`] : [])),
    "frame-ancestors 'none'",
  ].join('; ');
}

/** For answers whose route set no Content-Security-Policy of its own (the portal's pages do). */
export const DEFAULT_CSP = csp();

export const HSTS = 'max-age=31536000; includeSubDomains';
