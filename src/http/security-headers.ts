// The security headers every answer carries, Fastify's (app.ts, onSend) and those written straight
// on the socket when Fastify cannot answer (connection-limits.ts).
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
};

/** For answers whose route set no Content-Security-Policy of its own (the portal's pages do). */
export const DEFAULT_CSP = "default-src 'none'; frame-ancestors 'none'";

export const HSTS = 'max-age=31536000; includeSubDomains';
