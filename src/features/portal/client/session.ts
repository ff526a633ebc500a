// The signed-in session: bearer token in sessionStorage (no cookies), forgotten on sign-out, on a
// 401 from the API, or after config.idleMinutes without activity.
import { config } from './config.js';

const TOKEN = 'remessa.token';
const USER = 'remessa.user';
const ACTIVE = 'remessa.lastActive';

export interface Session {
  token: string;
  user: string;
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
  touch();
}

export function endSession(reason: EndReason): void {
  const had = getSession() !== null;
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
