// Talks to the Remessa API on the same origin. Every response is a JSON envelope (interface §2.2);
// failures become ApiError with the HTTP status and the envelope's safe `detail`.
// credentials: 'omit' — no cookies, and a 401 never pops the browser's Basic-auth dialog.
import * as tus from 'tus-js-client';
import type { FileEntryBody, RecipientStatusBody } from '../../../platform/http/schemas.js';
import type { ApiKeyBody, CreatedKeyBody } from '../../keys/schemas-keys.js';
import type { ArrivedFileBody, UploadRequestBody } from '../../requests/schemas-requests.js';
import { config } from './config.js';
import { t } from './i18n.js';
import { endSession, getSession } from './session.js';

export interface Envelope {
  status: number;
  description: string;
  user?: string;
  detail?: string;
}

// The API's response shapes come from the schemas openapi.json is made of (type-only imports:
// nothing of them reaches the bundle).
export type RecipientStatus = RecipientStatusBody;
/** (A $ref inside a schema types as unknown: `recipients` is named here.) */
export type FileEntry = Omit<FileEntryBody, 'recipients'> & { recipients?: RecipientStatus[] };
export type ApiKey = ApiKeyBody;
/** A key just made: its fields and, this once, the key itself. */
export type CreatedApiKey = CreatedKeyBody;
/** An upload request (docs/requests.md), and a file that arrived through one. */
export type UploadRequest = UploadRequestBody;
export type ArrivedFile = ArrivedFileBody;

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string | undefined,
  ) {
    super(`HTTP ${status}${detail ? `: ${detail}` : ''}`);
  }
}

export type AuthMode = { basic: { user: string; password: string } } | 'bearer' | 'none';

export interface CallOptions {
  method?: 'GET' | 'POST' | 'HEAD' | 'PATCH' | 'DELETE';
  query?: Record<string, string | number | undefined>;
  auth?: AuthMode;
  json?: unknown;
}

export function apiUrl(path: string, query: CallOptions['query'] = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return `${config.api}${path}${qs ? `?${qs}` : ''}`;
}

function basicHeader(user: string, password: string): string {
  const bytes = new TextEncoder().encode(`${user}:${password}`);
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return `Basic ${btoa(binary)}`;
}

function authHeaders(auth: AuthMode): Record<string, string> {
  if (auth === 'none') return {};
  if (auth === 'bearer') {
    const s = getSession();
    return s ? { Authorization: `Bearer ${s.token}` } : {};
  }
  return { Authorization: basicHeader(auth.basic.user, auth.basic.password) };
}

function parseEnvelope(text: string): Envelope | null {
  try {
    const body = JSON.parse(text) as Envelope;
    return typeof body === 'object' && body !== null ? body : null;
  } catch {
    return null;
  }
}

export async function call<T extends object = object>(
  path: string,
  opts: CallOptions = {},
): Promise<Envelope & T> {
  const auth = opts.auth ?? 'none';
  const headers: Record<string, string> = { Accept: 'application/json', ...authHeaders(auth) };
  let body: string | undefined;
  if (opts.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.json);
  }
  let res: Response;
  try {
    res = await fetch(apiUrl(path, opts.query), {
      method: opts.method ?? 'GET',
      headers,
      body,
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch {
    throw new ApiError(0, undefined);
  }
  const text = opts.method === 'HEAD' ? '' : await res.text();
  const envelope = parseEnvelope(text);
  if (!res.ok) {
    if (res.status === 401 && auth === 'bearer') endSession('expired');
    throw new ApiError(res.status, envelope?.detail);
  }
  return (envelope ?? { status: 0, description: '' }) as Envelope & T;
}

/**
 * A file the API answers (a CSV export) as a Blob, with the session's bearer token: a plain link
 * cannot carry the Authorization header.
 */
export async function fetchBlob(path: string, query: CallOptions['query'] = {}): Promise<Blob> {
  let res: Response;
  try {
    res = await fetch(apiUrl(path, query), {
      headers: authHeaders('bearer'),
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch {
    throw new ApiError(0, undefined);
  }
  if (!res.ok) {
    if (res.status === 401) endSession('expired');
    throw new ApiError(res.status, parseEnvelope(await res.text())?.detail);
  }
  return res.blob();
}

/** What GET {portal}portal/me answers; `usage`: bytes held, quota (null: none), largest file. */
export interface PortalMe {
  user?: unknown;
  lang?: unknown;
  role?: unknown;
  usage?: { bytes?: unknown; quota?: unknown; maxFileSize?: unknown };
}

/** The signed-in account as the portal sees it (GET {portal}portal/me), or null if unknown. */
export async function portalMe(): Promise<PortalMe | null> {
  try {
    const me = await fetch(`${config.portal}portal/me`, {
      headers: { ...authHeaders('bearer'), Accept: 'application/json' },
      credentials: 'omit',
      cache: 'no-store',
    });
    return me.ok ? ((await me.json()) as PortalMe) : null;
  } catch {
    return null;
  }
}

/** The words to show for an API failure (callers handle the statuses that mean more). */
export function errorText(err: unknown): string {
  if (!(err instanceof ApiError)) return t('errServer');
  switch (err.status) {
    case 0:
      return t('errNetwork');
    case 400:
      // The server's detail is English and technical: show our own words for the field it names.
      if (err.detail?.startsWith('m:')) return t('errEmailsServer');
      if (err.detail?.startsWith('c:')) return t('errMobilesServer');
      if (err.detail?.startsWith('d:')) return t('errDestinationServer');
      return t('errBadRequestNoDetail');
    case 401:
      return t('errUnauthorized');
    case 403:
      return t('errForbidden');
    case 404:
      return t('errNotFound');
    case 409:
      return t('errConflict');
    case 413:
      return t('errTooLarge');
    case 429:
      return t('errTooMany');
    default:
      return err.status >= 500 ? t('errServer') : t('errOther', { status: err.status });
  }
}

export interface UploadParams {
  d?: string;
  m?: string;
  c?: string;
  i?: string;
}

export interface UploadHandle {
  done: Promise<FileEntry[]>;
  abort(): void;
}

/**
 * One resumable (tus) upload per file, with tus-js-client: a dropped connection is retried from
 * where it stopped, and the upload's address is kept in localStorage so that after a reload the
 * same file, chosen again, continues instead of starting over.
 */
export function uploadFile(
  file: File,
  params: UploadParams,
  onProgress: (loaded: number, total: number) => void,
): UploadHandle {
  let upload: tus.Upload | null = null;
  let rejectIt: (err: unknown) => void = () => {};
  const done = new Promise<FileEntry[]>((resolve, reject) => {
    rejectIt = reject;
    const metadata: Record<string, string> = { filename: file.name };
    for (const [k, v] of Object.entries(params)) if (v) metadata[k] = v;
    const u = new tus.Upload(file, {
      endpoint: apiUrl('/uploads'),
      headers: authHeaders('bearer'),
      metadata,
      storeFingerprintForResuming: true,
      removeFingerprintOnSuccess: true,
      // Keeps trying for about three minutes while the network is away.
      retryDelays: [0, 1000, 3000, 5000, 10000, 20000, 30000, 60000, 60000],
      onProgress: (sent, total) => onProgress(sent, total),
      onError: (err) => {
        const res = (err as tus.DetailedError).originalResponse;
        const status = res ? res.getStatus() : 0;
        if (status === 401) endSession('expired');
        reject(new ApiError(status, res ? parseEnvelope(res.getBody())?.detail : undefined));
      },
      onSuccess: () => {
        const headers = { ...authHeaders('bearer'), Accept: 'application/json' };
        fetch(new URL(u.url ?? '', location.href), { headers })
          .then(async (r) => {
            const envelope = parseEnvelope(await r.text()) as (Envelope & { files?: FileEntry[] }) | null;
            if (!r.ok) throw new ApiError(r.status, envelope?.detail);
            resolve(envelope?.files ?? []);
          })
          .catch(reject);
      },
    });
    upload = u;
    u.findPreviousUploads()
      .then((previous) => {
        if (previous[0]) u.resumeFromPreviousUpload(previous[0]);
        u.start();
      })
      .catch(() => u.start());
  });
  return {
    done,
    abort: () => {
      // Cancelled on purpose: the server may drop what it has (termination).
      void upload?.abort(true).catch(() => {});
      rejectIt(new DOMException('cancelled', 'AbortError'));
    },
  };
}

/** Uploads a reload interrupted (tus-js-client's records in localStorage): name and progress. */
export function interruptedUploads(): { name: string; size: number }[] {
  const out: { name: string; size: number }[] = [];
  try {
    for (let i = 0; i < localStorage.length; i++) {
      const key = localStorage.key(i);
      if (!key?.startsWith('tus::')) continue;
      const v = JSON.parse(localStorage.getItem(key) ?? '{}') as {
        size?: number;
        metadata?: { filename?: string };
      };
      if (v.metadata?.filename) out.push({ name: v.metadata.filename, size: v.size ?? 0 });
    }
  } catch {
    // Storage disabled or unreadable: nothing to offer.
  }
  return out;
}
