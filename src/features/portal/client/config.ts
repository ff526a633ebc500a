// Settings the server renders into <meta name="remessa-config"> (no inline script under the CSP).

export type PageKind = 'app' | 'landing' | 'change' | 'admin' | 'request';

export interface PortalConfig {
  /** Path of the API, e.g. /v1 or /directlink/v1 (same origin as the portal). */
  api: string;
  /** Path of the portal, e.g. / or /directlink/ (always ends with a slash). */
  portal: string;
  /** REMESSA_LANG: the last fallback for the language. */
  lang: string;
  /** Minutes without activity after which the token is forgotten. */
  idleMinutes: number;
  page: PageKind;
  /** Single sign-on, when configured: the provider's name on the button. */
  sso: { name: string } | null;
  /** false: people sign in only through single sign-on (no password form). */
  passwordLogin: boolean;
}

function readConfig(): PortalConfig {
  const raw = document.querySelector('meta[name="remessa-config"]')?.getAttribute('content') ?? '{}';
  const parsed = JSON.parse(raw) as Partial<PortalConfig>;
  const page = document.body.dataset['page'];
  return {
    api: parsed.api ?? '/v1',
    portal: parsed.portal ?? '/',
    lang: parsed.lang ?? 'pt',
    idleMinutes: parsed.idleMinutes ?? 30,
    sso: parsed.sso ?? null,
    passwordLogin: parsed.passwordLogin !== false,
    page: page === 'landing' || page === 'change' || page === 'admin' || page === 'request' ? page : 'app',
  };
}

export const config: PortalConfig = readConfig();
