// Presenters: the only places that build the response envelope (interface §2.2) and the OAuth
// token / error objects (§2.1, §2.7). Key order follows the interface samples.
import { createRequire } from 'node:module';
import { nowGoTime } from './go-time.js';
import { type ErrorStatus, STATUS_TEXT } from './http-error.js';

const pkg = createRequire(import.meta.url)('../../../../package.json') as { version: string };
export const APIVER = `v1 (${pkg.version})`;

export interface Envelope {
  status: number;
  description: string;
  apiver: string;
  time: string;
  user?: string;
  detail?: string;
}

export type Handler =
  | 'handlerDownloadList'
  | 'handlerAuthLogin'
  | 'handlerAuthForget'
  | 'handlerAuthLogout'
  | 'handlerWebhooks'
  | 'handlerKeys'
  | 'handlerRequests'
  | 'handlerHealth'
  | 'handlerAuthSso'
  | `handlerAdmin${string}`;

export function successEnvelope<T extends object>(handler: Handler, user: string | null, extra: T) {
  const base: Envelope = {
    status: 0,
    description: `${handler}:succsessfully`,
    apiver: APIVER,
    time: nowGoTime(),
  };
  if (user !== null) base.user = user;
  return { ...base, ...extra };
}

export function errorEnvelope(status: ErrorStatus, detail?: string): Envelope {
  const env: Envelope = { status, description: STATUS_TEXT[status], apiver: APIVER, time: nowGoTime() };
  if (detail) env.detail = detail;
  return env;
}

export function oauthToken(accessToken: string, expiresIn: number, baseUrl: string) {
  return { access_token: accessToken, token_type: 'Bearer', expires_in: expiresIn, scope: baseUrl };
}

const OAUTH_TEXT: Partial<Record<ErrorStatus, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  500: 'Internal server error',
};

export function oauthError(status: ErrorStatus, baseUrl: string) {
  return { error: status, error_description: OAUTH_TEXT[status] ?? STATUS_TEXT[status], error_uri: baseUrl };
}
