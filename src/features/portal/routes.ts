// The browser portal, served by `remessa serve` itself at config.portalPath (the parent of
// the API path): the HTML shell, the hashed JS/CSS bundle from dist/portal, the recipient landing
// page for browsers opening a download link, the password-change page {base}/auth/change, the
// page of an upload request's link at {portal}request?t= and the admin console at {portal}admin.
// Registered from src/platform/http/app.ts outside the API prefix. See docs/portal.md.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type Config, LANGS, type Lang } from '../../app/config.js';
import { escapeHtml, pageStart } from '../../platform/html.js';
import { currentUser, requireBearer } from '../../platform/http/auth-hooks.js';
import { csp } from '../../platform/http/security-headers.js';

/** Minutes without activity after which the portal forgets the bearer token. */
export const PORTAL_IDLE_MINUTES = 30;

export const PORTAL_CSP = csp({
  scripts: ["'self'"],
  styles: ["'self'"],
  images: ["'self'", 'data:'],
  connect: ["'self'"],
  forms: ["'self'"],
  base: ["'none'"],
});

type PageKind = 'app' | 'landing' | 'change' | 'admin' | 'request';

interface Manifest {
  js: string;
  css: string;
}

const PORTAL_DIR = fileURLToPath(new URL('../../../portal/', import.meta.url));
const ASSETS_DIR = `${PORTAL_DIR}assets`;

function loadManifest(): Manifest | null {
  const file = `${PORTAL_DIR}manifest.json`;
  if (!existsSync(file)) return null;
  return JSON.parse(readFileSync(file, 'utf8')) as Manifest;
}

function pickLang(request: FastifyRequest, fallback: Lang): Lang {
  const q = (request.query as Record<string, unknown> | undefined)?.['lang'];
  return typeof q === 'string' && (LANGS as readonly string[]).includes(q) ? (q as Lang) : fallback;
}

function renderShell(config: Config, manifest: Manifest | null, page: PageKind, lang: Lang): string {
  const settings = {
    api: config.apiPath,
    portal: config.portalPath,
    lang: config.lang,
    idleMinutes: PORTAL_IDLE_MINUTES,
    sso: config.oidc ? { name: config.oidc.name } : null,
    passwordLogin: config.passwordLogin,
  };
  const assets = `${config.portalPath}assets/`;
  const head = manifest
    ? `<link rel="stylesheet" href="${assets}${escapeHtml(manifest.css)}">\n` +
      `<script type="module" src="${assets}${escapeHtml(manifest.js)}"></script>`
    : '';
  return `${pageStart(lang)}<meta name="remessa-config" content="${escapeHtml(JSON.stringify(settings))}">
<title>Remessa</title>
<link rel="icon" href="data:,">
${head}
</head>
<body data-page="${page}">
<noscript><p>Remessa needs JavaScript in this page. / O Remessa precisa de JavaScript nesta página. / Remessa necesita JavaScript en esta página.</p></noscript>
${manifest ? '' : '<p>The portal was not built: run <code>npm run build</code>.</p>'}
</body>
</html>
`;
}

/** Headers of every portal HTML response: strict CSP, never cached, never framed. */
function sendShell(reply: FastifyReply, html: string) {
  return reply
    .header('Content-Security-Policy', PORTAL_CSP)
    .header('Cache-Control', 'no-cache')
    .header('X-Frame-Options', 'DENY')
    .type('text/html; charset=utf-8')
    .send(html);
}

/**
 * Should this request to {base}/download/file get the landing page instead of the bytes? Yes for
 * a browser navigation (Accept names text/html) without a PIN (`p`) and without `dl` (which the
 * landing page's Download button and the portal's lists add to ask for the bytes).
 */
export function wantsLandingPage(request: { headers: Record<string, unknown>; url: string }): boolean {
  const accept = request.headers['accept'];
  if (typeof accept !== 'string' || !/\btext\/html\b/i.test(accept)) return false;
  const q = request.url.indexOf('?');
  const params = new URLSearchParams(q >= 0 ? request.url.slice(q + 1) : '');
  return !params.has('p') && !params.has('dl');
}

/** Route constraint that sends browser navigations of download links to the landing page. */
const browserPageStrategy = {
  name: 'remessaBrowserPage',
  storage() {
    const handlers = new Map<string, unknown>();
    return {
      get: (value: string) => (handlers.get(value) ?? null) as never,
      set: (value: string, store: unknown) => {
        handlers.set(value, store);
      },
    };
  },
  deriveConstraint: (req: { headers: Record<string, unknown>; url?: string }) =>
    wantsLandingPage({ headers: req.headers, url: req.url ?? '' }) ? 'landing' : 'bytes',
  mustMatchWhenDerived: false,
};

export async function portalRoutes(app: FastifyInstance): Promise<void> {
  const { config, log, files } = app.services;
  const manifest = loadManifest();
  if (!manifest) log.warn({ dir: PORTAL_DIR }, 'portal assets missing: run `npm run build`');
  const shells = new Map<string, string>();
  const shell = (page: PageKind, lang: Lang) => {
    const key = `${page}:${lang}`;
    let html = shells.get(key);
    if (!html) {
      html = renderShell(config, manifest, page, lang);
      shells.set(key, html);
    }
    return html;
  };
  const page = (kind: PageKind) => async (request: FastifyRequest, reply: FastifyReply) =>
    sendShell(reply, shell(kind, pickLang(request, config.lang)));

  if (existsSync(ASSETS_DIR)) {
    await app.register(fastifyStatic, {
      root: ASSETS_DIR,
      prefix: `${config.portalPath}assets/`,
      decorateReply: false,
      index: false,
      // Names carry a content hash: cache for a year.
      immutable: true,
      maxAge: '365d',
    });
  }

  app.get(config.portalPath, page('app'));
  // The admin console (docs/admin.md): the same bundle; the role is checked by the admin API.
  app.get(`${config.portalPath}admin`, page('admin'));
  app.get(`${config.apiPath}/auth/change`, page('change'));
  // An upload request's link (docs/requests.md): no sign-in, the token in `t` is read by the page.
  app.get(`${config.portalPath}request`, page('request'));
  app.addConstraintStrategy(browserPageStrategy);
  app.get(
    `${config.apiPath}/download/file`,
    { constraints: { remessaBrowserPage: 'landing' } },
    page('landing'),
  );

  // The signed-in user's language, so the portal can speak it (lang query → user → browser), and
  // role, so the API-keys page offers only the scopes the account can use, and its usage and quota
  // (docs/quotas.md), which the lists show.
  // Not part of the API at {base_url}: left out of openapi.json.
  app.get(
    `${config.portalPath}portal/me`,
    { schema: { hide: true }, preHandler: requireBearer },
    async (request, reply) => {
      const user = currentUser(request);
      return reply
        .header('Cache-Control', 'no-store')
        .send({ user: user.name, lang: user.lang, role: user.role, usage: files.quotas.account(user) });
    },
  );
}
