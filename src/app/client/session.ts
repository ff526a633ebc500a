// Where the command-line client keeps what it remembers: the bearer token from `remessa login`
// (per server) and tus-js-client's record of unfinished uploads, in the user's config directory
// ($XDG_CONFIG_HOME/remessa, else ~/.config/remessa). Directory 0700, files 0600: a token is a
// password for its lifetime.
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { invalid, unauthorized } from '../../platform/errors.js';

export function configDir(): string {
  const base = process.env['XDG_CONFIG_HOME'] || path.join(homedir(), '.config');
  const dir = path.join(base, 'remessa');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

interface Saved {
  token: string;
  user: string;
  /** ms since the epoch */
  expires: number;
}

const tokensFile = () => path.join(configDir(), 'tokens.json');

function readAll(): Record<string, Saved> {
  try {
    return JSON.parse(readFileSync(tokensFile(), 'utf8')) as Record<string, Saved>;
  } catch {
    return {};
  }
}

function writeAll(all: Record<string, Saved>): void {
  const file = tokensFile();
  writeFileSync(file, `${JSON.stringify(all, null, 2)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600); // an older file keeps its mode on rewrite
}

export function saveToken(server: string, saved: Saved): void {
  writeAll({ ...readAll(), [server]: saved });
}

export function forgetToken(server: string): Saved | undefined {
  const all = readAll();
  const had = all[server];
  delete all[server];
  writeAll(all);
  return had;
}

export function savedToken(server: string): Saved | undefined {
  const s = readAll()[server];
  return s && s.expires > Date.now() ? s : undefined;
}

/** `--server` or REMESSA_SERVER: the API's base URL, e.g. https://files.example.com/v1. */
export function serverUrl(flag: string | undefined): string {
  const raw = flag ?? process.env['REMESSA_SERVER'];
  if (!raw) throw invalid('no server: give --server URL or set REMESSA_SERVER');
  if (!/^https?:\/\//.test(raw)) throw invalid(`--server must be an http(s) URL, got "${raw}"`);
  return raw.replace(/\/+$/, '');
}

/** REMESSA_USER / REMESSA_PASSWORD (Basic), else the token from `remessa login` (Bearer). */
export function authorization(server: string): string {
  const user = process.env['REMESSA_USER'];
  const password = process.env['REMESSA_PASSWORD'];
  if (user && password) return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  const saved = savedToken(server);
  if (saved) return `Bearer ${saved.token}`;
  throw unauthorized('not signed in: run `remessa login` or set REMESSA_USER and REMESSA_PASSWORD');
}
