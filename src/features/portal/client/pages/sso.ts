// The end of a single sign-on: the server's callback sent the browser to #/sso/<code>. The code is
// taken out of the address at once, traded (once) for the bearer token, and the session starts.
import { call, errorText } from '../api.js';
import { config } from '../config.js';
import { notice, pageHeading, put } from '../dom.js';
import { t } from '../i18n.js';
import { loadUserLang } from '../language.js';
import type { PageContext } from '../page-context.js';
import { startSession } from '../session.js';

/** The hand-off code of a #/sso/<code> route, or null. */
export function ssoCode(route: string): string | null {
  return /^\/sso\/([A-Za-z0-9_-]{1,256})$/.exec(route)?.[1] ?? null;
}

export async function finishSingleSignOn(ctx: PageContext, code: string): Promise<void> {
  // Out of the address (and the history) before anything else: the code is single-use anyway.
  history.replaceState(history.state, '', '#/');
  put(ctx.main, pageHeading(t('signInTitle')), notice('info', t('loading')));
  try {
    const res = await call<{ bearer: string; logoutUrl?: string }>('/auth/oidc/session', {
      method: 'POST',
      json: { code },
    });
    startSession({ token: res.bearer, user: res.user ?? '', logoutUrl: res.logoutUrl ?? null });
    await loadUserLang();
    if (config.page === 'admin') ctx.refresh();
    else ctx.go('#/send');
  } catch (err) {
    put(ctx.main, pageHeading(t('signInTitle')), notice('error', `${t('ssoFailed')} ${errorText(err)}`));
  }
}
