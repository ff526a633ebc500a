// Which language the portal speaks: lang query → the user's setting → the browser → REMESSA_LANG.
// The recipient's landing page differs: its link carries the sender's language, so there the
// recipient's own choice (the switcher) → the browser → the link's lang → REMESSA_LANG. An upload
// request's page has nobody signed in: lang query (the switcher writes it) → the browser → REMESSA_LANG.
import { portalMe } from './api.js';
import { config } from './config.js';
import { browserLang, isLang, type Lang, setLang } from './i18n.js';

const USER_LANG = 'remessa.userLang';
/** What the switcher chose in this tab (the landing page's address keeps the sender's lang). */
const CHOSEN_LANG = 'remessa.chosenLang';

export function queryLang(): Lang | null {
  const v = new URLSearchParams(location.search).get('lang');
  return isLang(v) ? v : null;
}

export function pickLang(): Lang {
  const fallback = isLang(config.lang) ? config.lang : 'pt';
  if (config.page === 'landing') {
    const chosen = sessionStorage.getItem(CHOSEN_LANG);
    return (isLang(chosen) ? chosen : null) ?? browserLang() ?? queryLang() ?? fallback;
  }
  if (config.page === 'request') return queryLang() ?? browserLang() ?? fallback;
  const user = sessionStorage.getItem(USER_LANG);
  return queryLang() ?? (isLang(user) ? user : null) ?? browserLang() ?? fallback;
}

/** The switcher writes `lang` into the address, so it wins like a lang query and survives reloads. */
export function chooseLang(lang: Lang): void {
  const url = new URL(location.href);
  url.searchParams.set('lang', lang);
  history.replaceState(history.state, '', url);
  sessionStorage.setItem(CHOSEN_LANG, lang);
  setLang(lang);
}

export function forgetUserLang(): void {
  sessionStorage.removeItem(USER_LANG);
}

/** After sign-in: adopt the user's language (GET {portal}portal/me) unless the address names one. */
export async function loadUserLang(): Promise<void> {
  // The language is a nicety; the page works without it.
  const me = await portalMe();
  if (isLang(me?.lang)) {
    sessionStorage.setItem(USER_LANG, me.lang);
    if (!queryLang()) setLang(me.lang);
  }
}
