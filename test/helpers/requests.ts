// Upload requests over HTTP: make one as its requester, and send files as an outsider does (tus by
// hand, with `request <token>` and `pin <PIN>` in Upload-Metadata, without credentials).
import assert from 'node:assert/strict';
import { call, type TestServer } from './server.js';

export interface MadeRequest {
  id: string;
  token: string;
  links: { to: string | null; url: string }[];
  body: Record<string, unknown>;
}

/** POST {base}/requests as `auth`; the first link's token. */
export async function makeRequest(
  t: TestServer,
  auth: string,
  body: Record<string, unknown>,
): Promise<MadeRequest> {
  const r = await call(`${t.base}/requests`, {
    method: 'POST',
    headers: { Authorization: auth, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const request = r.body['request'] as { id: string; links: { to: string | null; url: string }[] };
  return { id: request.id, token: tokenOf(request.links[0]!.url), links: request.links, body: r.body };
}

export const tokenOf = (url: string) => new URL(url).searchParams.get('t')!;

export function metadata(fields: Record<string, string>): string {
  return Object.entries(fields)
    .map(([k, v]) => `${k} ${Buffer.from(v).toString('base64')}`)
    .join(',');
}

/** tus creation under a request (with the whole body when `data` is given); status, location, detail. */
export async function requestUpload(
  t: TestServer,
  token: string,
  name: string,
  data: Buffer | null,
  opts: { length?: number; pin?: string; headers?: Record<string, string> } = {},
) {
  const length = opts.length ?? data?.length ?? 0;
  const meta = metadata({ filename: name, request: token, ...(opts.pin ? { pin: opts.pin } : {}) });
  const res = await fetch(`${t.base}/uploads`, {
    method: 'POST',
    headers: {
      'Tus-Resumable': '1.0.0',
      'Upload-Length': String(length),
      'Upload-Metadata': meta,
      ...(data ? { 'Content-Type': 'application/offset+octet-stream' } : {}),
      ...opts.headers,
    },
    ...(data ? { body: new Uint8Array(data) } : {}),
  });
  const text = await res.text();
  const body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  return {
    status: res.status,
    location: res.headers.get('location'),
    offset: res.headers.get('upload-offset'),
    detail: body['detail'] as string | undefined,
  };
}

/** PATCH bytes at `offset` to an upload's URL (path-absolute), without credentials. */
export async function patchUpload(t: TestServer, location: string, offset: number, data: Buffer) {
  const res = await fetch(`${t.origin}${location}`, {
    method: 'PATCH',
    headers: {
      'Tus-Resumable': '1.0.0',
      'Upload-Offset': String(offset),
      'Content-Type': 'application/offset+octet-stream',
    },
    body: new Uint8Array(data),
  });
  const text = await res.text();
  const body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  return {
    status: res.status,
    offset: res.headers.get('upload-offset'),
    detail: body['detail'] as string | undefined,
  };
}
