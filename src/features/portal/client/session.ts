// The signed-in session: bearer token in sessionStorage (no cookies), forgotten on sign-out, on a
// 401 from the API, or after config.idleMinutes without activity.
import { config } from './config.js';

const TOKEN = 'remessa.token';
const USER = 'remessa.user';
const ACTIVE = 'remessa.lastActive';
/** The identity provider's end-session URL of a single sign-on, visited after signing out. */
const LOGOUT_URL = 'remessa.logoutUrl';

export interface Session {
  token: string;
  user: string;
  /** Single sign-on: where signing out also ends the provider's session. */
  logoutUrl?: string | null;
}

export type EndReason = 'signedOut' | 'idle' | 'expired';
type EndListener = (reason: EndReason) => void;

let onEnd: EndListener = () => {};
let idleTimer: number | undefined;

export function getSession(): Session | null {
  const token = sessionStorage.getItem(TOKEN);
  const user = sessionStorage.getItem(USER);
  return token && user ? { token, user } : null;
}

export function startSession(session: Session): void {
  sessionStorage.setItem(TOKEN, session.token);
  sessionStorage.setItem(USER, session.user);
  if (session.logoutUrl) sessionStorage.setItem(LOGOUT_URL, session.logoutUrl);
  else sessionStorage.removeItem(LOGOUT_URL);
  touch();
}

/** The provider's logout URL of this session (single sign-on), if any. */
export function providerLogoutUrl(): string | null {
  return sessionStorage.getItem(LOGOUT_URL);
}

export function endSession(reason: EndReason): void {
  const had = getSession() !== null;
  sessionStorage.removeItem(LOGOUT_URL);
  sessionStorage.removeItem(TOKEN);
  sessionStorage.removeItem(USER);
  sessionStorage.removeItem(ACTIVE);
  if (had) onEnd(reason);
}

/** Records activity (input, or upload progress) so the idle timer restarts. */
export function touch(): void {
  if (getSession()) sessionStorage.setItem(ACTIVE, String(Date.now()));
}

function idleTooLong(): boolean {
  const last = Number(sessionStorage.getItem(ACTIVE) ?? '0');
  return Date.now() - last > config.idleMinutes * 60_000;
}

/** Starts watching for inactivity; `listener` runs whenever a session ends. */
export function watchSession(listener: EndListener): void {
  onEnd = listener;
  if (getSession() && idleTooLong()) endSession('idle');
  let lastTouch = 0;
  const activity = () => {
    const now = Date.now();
    if (now - lastTouch > 5_000) {
      lastTouch = now;
      touch();
    }
  };
  for (const type of ['pointerdown', 'keydown', 'scroll', 'touchstart']) {
    window.addEventListener(type, activity, { passive: true, capture: true });
  }
  window.clearInterval(idleTimer);
  idleTimer = window.setInterval(() => {
    if (getSession() && idleTooLong()) endSession('idle');
  }, 15_000);
}
