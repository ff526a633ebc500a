// The OpenAPI document (openapi.json) and Swagger UI at {base}/docs, served from the package
// (no CDN). Response schemas document the API and let the tests check every response; they never
// serialize: Fastify's schema serializer orders and drops keys, and the interface's bytes are the
// presenters' (src/platform/http/schemas.ts).
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import type { TSchema } from 'typebox';
import type { Config } from '../../../app/config.js';
import { APIVER } from '../presenters.js';
import { COMPONENTS } from '../schemas.js';
import { csp } from '../security-headers.js';

// The API's own Content-Security-Policy for Swagger UI: scripts, styles and images from the
// package (served by us, no CDN), the document fetched from the same origin, nothing inline but
// the one <style> element Swagger UI's bundle adds, allowed by its hash (a new Swagger UI with
// another one shows up as a CSP violation in test/openapi.test.ts).
export const DOCS_CSP = csp({
  scripts: ["'self'"],
  styles: ["'self'", "'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='"],
  images: ["'self'", 'data:'],
  connect: ["'self'"],
  forms: ["'self'"],
  base: ["'none'"],
});

/**
 * The document: every tagged route's schemas, paths relative to {base_url}. `more`: the named
 * response schemas of the slices that keep their own (features/admin/schemas-*.ts).
 */
export async function describeApi(app: FastifyInstance, config: Config, more: TSchema[] = []): Promise<void> {
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  for (const schema of [...COMPONENTS, ...more]) app.addSchema(schema);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Remessa',
        version: APIVER.replace(/^v1 \((.*)\)$/, '$1'),
        description:
          'Managed file transfer: upload over REST, announce secure links by e-mail or SMS, download with a PIN. ' +
          "Paths are relative to {base_url}. Every response except the token endpoint's is a JSON envelope; " +
          'the token endpoint answers the token object or an OAuth error object. Endpoints marked (ext) extend the interface.',
      },
      servers: [{ url: config.baseUrl }],
      components: {
        securitySchemes: {
          basic: {
            type: 'http',
            scheme: 'basic',
            description: 'HTTP Basic with the platform user name and password.',
          },
          bearer: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description: 'A token from POST /oauth2/token or POST /auth/login.',
          },
        },
      },
    },
    // Only the API's routes (they carry tags): not the portal's pages, assets or these docs.
    hideUntagged: true,
    // Paths relative to {base_url}, as the interface writes them.
    transform: ({ schema, url }) => ({
      schema: schema as never,
      url: url.startsWith(`${config.apiPath}/`) ? url.slice(config.apiPath.length) : url,
    }),
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json['$id'] ?? `def-${i}`) },
  });
}

/** Swagger UI and openapi.json (after the error handler, so their errors are envelopes). */
export async function serveApiDocs(app: FastifyInstance, config: Config): Promise<void> {
  const docsIndex = `${config.apiPath}/docs/static/index.html`;
  await app.register(swaggerUi, {
    routePrefix: `${config.apiPath}/docs`,
    staticCSP: DOCS_CSP,
    uiConfig: { url: `${config.apiPath}/openapi.json`, deepLinking: false },
    uiHooks: {
      // The package redirects static/index.html to the page by rewriting the URL's end, so with a
      // query string it sent the client to the same URL again, for ever.
      onRequest: async (request, reply) => {
        if (request.url.split('?', 1)[0] === docsIndex) return reply.redirect(`${config.apiPath}/docs/`);
      },
    },
  });
  app.get(`${config.apiPath}/openapi.json`, { schema: { hide: true } }, async (_request, reply) =>
    reply.header('Cache-Control', 'no-cache').send(app.swagger()),
  );
}
