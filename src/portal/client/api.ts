// Talks to the Remessa API on the same origin. Every response is a JSON envelope (interface §2.2);
// failures become ApiError with the HTTP status and the envelope's safe `detail`.
// credentials: 'omit' — no cookies, and a 401 never pops the browser's Basic-auth dialog.
import type { FileEntryBody, RecipientStatusBody } from '../../http/schemas.js';
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
  method?: 'GET' | 'POST' | 'HEAD';
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

/** One multipart request per file (XMLHttpRequest, for upload progress). */
export function uploadFile(
  file: File,
  params: UploadParams,
  onProgress: (loaded: number, total: number) => void,
): UploadHandle {
  const xhr = new XMLHttpRequest();
  const done = new Promise<FileEntry[]>((resolve, reject) => {
    xhr.open('POST', apiUrl('/upload', { file: file.name, ...params }));
    for (const [k, v] of Object.entries(authHeaders('bearer'))) xhr.setRequestHeader(k, v);
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : file.size);
    xhr.onload = () => {
      const envelope = parseEnvelope(xhr.responseText) as (Envelope & { files?: FileEntry[] }) | null;
      if (xhr.status >= 200 && xhr.status < 300) return resolve(envelope?.files ?? []);
      if (xhr.status === 401) endSession('expired');
      reject(new ApiError(xhr.status, envelope?.detail));
    };
    xhr.onerror = () => reject(new ApiError(0, undefined));
    xhr.onabort = () => reject(new DOMException('cancelled', 'AbortError'));
    const form = new FormData();
    form.append('file', file, file.name);
    xhr.send(form);
  });
  return { done, abort: () => xhr.abort() };
}
