// An upload request's page: one file sent with tus-js-client under the request's token (and the PIN
// of an invited link), without any credential, and its row in the page's list. A cut connection is
// retried from the server's offset, as on the send page.
import * as tus from 'tus-js-client';
import { apiUrl } from '../api.js';
import { clear, h, notice, put } from '../dom.js';
import { formatSize } from '../format.js';
import { type RequestWord, rt } from './request-words.js';

export type RowState = 'waiting' | 'uploading' | 'done' | 'failed';

export interface RequestUpload {
  file: File;
  state: RowState;
  loaded: number;
  /** Why it was not sent (already in the page's words). */
  error: string;
  /** Redraws this upload's row (set while the row is on screen). */
  redraw: () => void;
}

/** What the server answered when it refused an upload: status (0: no answer) and detail. */
export class UploadRefused extends Error {
  constructor(
    readonly status: number,
    readonly detail: string | undefined,
  ) {
    super(`HTTP ${status}${detail ? `: ${detail}` : ''}`);
  }
}

function detailOf(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { detail?: unknown };
    return typeof parsed.detail === 'string' ? parsed.detail : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Sends `file` to the request: `request` and `pin` travel in Upload-Metadata, and the upload's URL
 * is its only credential afterwards. Resolves once the server has stored the whole file.
 */
export function sendToRequest(
  file: File,
  token: string,
  pin: string,
  onProgress: (sent: number) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const metadata: Record<string, string> = { filename: file.name, request: token };
    if (pin) metadata['pin'] = pin;
    const upload = new tus.Upload(file, {
      endpoint: apiUrl('/uploads'),
      metadata,
      // Nothing is kept for a later visit: the PIN and the page's state live only in this one.
      storeFingerprintForResuming: false,
      // Keeps trying for about three minutes while the network is away (as the send page).
      retryDelays: [0, 1000, 3000, 5000, 10000, 20000, 30000, 60000, 60000],
      onProgress: (sent) => onProgress(sent),
      onError: (err) => {
        const res = (err as tus.DetailedError).originalResponse;
        reject(new UploadRefused(res ? res.getStatus() : 0, res ? detailOf(res.getBody()) : undefined));
      },
      onSuccess: () => resolve(),
    });
    upload.start();
  });
}

/** The page's words for why the server refused one upload. */
export function refusalWord(err: unknown): RequestWord {
  if (!(err instanceof UploadRefused)) return 'errServer';
  const { status, detail = '' } = err;
  if (status === 403) {
    if (detail.startsWith('wrong PIN')) return 'wrongCode';
    if (detail.startsWith('PIN expired')) return 'codeExpired';
    if (detail.startsWith('link locked')) return 'linkLocked';
    return 'codeNeeded';
  }
  if (status === 410) return 'closed';
  if (status === 409) return 'full';
  if (status === 413) return 'noRoom';
  if (status === 429) return 'errTooMany';
  if (status === 0) return 'errNetwork';
  return 'errServer';
}

function percentOf(u: RequestUpload): number {
  if (u.file.size === 0) return u.state === 'done' ? 100 : 0;
  return Math.min(100, Math.floor((u.loaded / u.file.size) * 100));
}

function statusOf(u: RequestUpload): HTMLElement {
  if (u.state === 'uploading')
    return h('span', { class: 'upload-status' }, rt('uploading', { percent: percentOf(u) }));
  if (u.state === 'waiting') return h('span', { class: 'upload-status' }, rt('waiting'));
  if (u.state === 'done') return notice('success', rt('received'));
  return notice('error', rt('notSent', { reason: u.error }));
}

/** One file's row: name, size, progress bar and what became of it. */
export function requestRow(u: RequestUpload): HTMLLIElement {
  const li = h('li', { class: 'upload' });
  const full = () => {
    const percent = percentOf(u);
    clear(li);
    put(
      li,
      h(
        'div',
        { class: 'upload-head' },
        h('span', { class: 'upload-name' }, u.file.name),
        h('span', { class: 'upload-size' }, formatSize(u.file.size)),
      ),
      h('progress', {
        max: 100,
        value: percent,
        'aria-label': rt('progressOf', { name: u.file.name }),
        'aria-valuetext': `${percent}%`,
      }),
      h('div', { class: 'upload-foot' }, statusOf(u)),
    );
  };
  // Progress events touch only the bar and its text.
  u.redraw = () => {
    const bar = li.querySelector('progress');
    const text = li.querySelector('.upload-status');
    if (u.state === 'uploading' && bar && text) {
      const percent = percentOf(u);
      bar.value = percent;
      bar.setAttribute('aria-valuetext', `${percent}%`);
      text.textContent = rt('uploading', { percent });
    } else full();
  };
  full();
  return li;
}
