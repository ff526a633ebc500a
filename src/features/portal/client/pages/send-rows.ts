// Send page: one upload's row in the list (name, size, progress bar, speed, cancel button), and
// once it is stored, who the server announced it to and its links, each with a copy button.

import type { FileEntry, UploadHandle, UploadParams } from '../api.js';
import { clear, field, h, notice, put, say } from '../dom.js';
import { formatSize, formatSpeed } from '../format.js';
import { type MessageKey, t } from '../i18n.js';

type State = 'waiting' | 'uploading' | 'done' | 'failed' | 'cancelled';

export interface Upload {
  id: string;
  /** The Send press this upload came from: its files stay chosen until all of them are sent. */
  batch: File[];
  file: File;
  params: UploadParams;
  state: State;
  loaded: number;
  startedAt: number;
  speed: number;
  links: FileEntry[];
  error: string;
  handle: UploadHandle | null;
  /** Redraws this upload's row (set while the Send page is on screen). */
  redraw: () => void;
}

/** "b***@example.com (e-mail), +55*******0000 (SMS)": who the server announced the files to. */
function notifiedList(files: FileEntry[]): string {
  const names = files.flatMap((f) =>
    (f.recipients ?? []).map(
      (r) => `${r.address} (${t(r.channel === 'email' ? 'channelEmail' : 'channelSms')})`,
    ),
  );
  return [...new Set(names)].join(', ');
}

function cancel(u: Upload): void {
  if (u.state === 'waiting') {
    u.state = 'cancelled';
    u.redraw();
  } else u.handle?.abort();
}

/** Copies `text` (shown in `input`) and says so in `slot`, in the words given. */
export async function copy(
  text: string,
  input: HTMLInputElement,
  slot: HTMLElement,
  words: { done: MessageKey; failed: MessageKey } = { done: 'copied', failed: 'copyFailed' },
): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
    say(slot, 'success', t(words.done));
  } catch {
    // Plain-http deployments have no async clipboard: select the text so the user can copy it.
    input.focus();
    input.select();
    const ok = document.execCommand('copy');
    say(slot, ok ? 'success' : 'error', t(ok ? words.done : words.failed));
  }
}

function linkRow(entry: FileEntry): HTMLElement {
  const input = h('input', { type: 'text', readonly: true, value: entry.linkURL, class: 'link' });
  const slot = h('div', { class: 'status-slot' });
  return h(
    'div',
    { class: 'link-row' },
    field(t('linkFor', { name: entry.name }), input),
    h(
      'button',
      { type: 'button', class: 'secondary', onclick: () => copy(entry.linkURL, input, slot) },
      t('copyLink'),
    ),
    slot,
  );
}

export function uploadRow(u: Upload): HTMLLIElement {
  const li = h('li', { class: 'upload' });
  u.redraw = () => {
    const percent =
      u.file.size > 0
        ? Math.min(100, Math.floor((u.loaded / u.file.size) * 100))
        : u.state === 'done'
          ? 100
          : 0;
    const progress = h('progress', {
      max: 100,
      value: percent,
      'aria-label': t('progressOf', { name: u.file.name }),
      'aria-valuetext': `${percent}%`,
    });
    let status: HTMLElement;
    if (u.state === 'uploading')
      status = h('span', { class: 'upload-status' }, t('progress', { percent, speed: formatSpeed(u.speed) }));
    else if (u.state === 'waiting') status = h('span', { class: 'upload-status' }, t('waiting'));
    else if (u.state === 'done') status = notice('success', t('sent'));
    else if (u.state === 'cancelled') status = notice('info', t('cancelled'));
    else status = notice('error', u.error);
    const busy = u.state === 'uploading' || u.state === 'waiting';
    clear(li);
    put(
      li,
      h(
        'div',
        { class: 'upload-head' },
        h('span', { class: 'upload-name' }, u.file.name),
        h('span', { class: 'upload-size' }, formatSize(u.file.size)),
      ),
      progress,
      h(
        'div',
        { class: 'upload-foot' },
        status,
        busy &&
          h(
            'button',
            {
              type: 'button',
              class: 'secondary small',
              'aria-label': t('cancelFile', { name: u.file.name }),
              onclick: () => cancel(u),
            },
            t('cancel'),
          ),
      ),
      u.state === 'done' && notifiedList(u.links)
        ? h('p', { class: 'notified' }, t('notified', { list: notifiedList(u.links) }))
        : null,
      u.state === 'done' ? u.links.map(linkRow) : null,
    );
  };
  // Progress events only touch the bar and the status text, so focus inside the row is kept.
  const full = u.redraw;
  u.redraw = () => {
    const bar = li.querySelector('progress');
    const statusEl = li.querySelector('.upload-status');
    if (u.state === 'uploading' && bar && statusEl) {
      const percent = u.file.size > 0 ? Math.min(100, Math.floor((u.loaded / u.file.size) * 100)) : 0;
      bar.value = percent;
      bar.setAttribute('aria-valuetext', `${percent}%`);
      statusEl.textContent = t('progress', { percent, speed: formatSpeed(u.speed) });
    } else full();
  };
  full();
  return li;
}
