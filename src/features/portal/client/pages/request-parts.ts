// Upload requests on screen, shared by the portal's Requests page (requests.ts) and the admin
// console's (admin/requests.ts): each request as a card (its state, what arrived, its limits and
// expiry), its links with Copy while it is open, the files that arrived (loaded when opened), and
// Close after a confirmation where the viewer may.

import { type ArrivedFile, errorText, type UploadRequest } from '../api.js';
import { field, h, nextId, notice, say, swap } from '../dom.js';
import { formatSize } from '../format.js';
import { type MessageKey, t } from '../i18n.js';
import { badge, timeCell } from './admin/ui.js';
import { confirmInSlot } from './confirm.js';
import { copy } from './send-rows.js';

const STATE: Record<UploadRequest['state'], [MessageKey, 'ok' | 'muted' | 'bad']> = {
  open: ['requestOpen', 'ok'],
  closed: ['requestClosed', 'muted'],
  expired: ['requestExpired', 'bad'],
};

export interface RequestListOptions {
  load(): Promise<UploadRequest[]>;
  /** Closes a request; absent where the viewer may not. */
  close?: (id: string) => Promise<unknown>;
  /** Loads what arrived; absent where the viewer has no such view (the console). */
  files?: (id: string) => Promise<ArrivedFile[]>;
  /** Shows each request's requester (the console lists everyone's). */
  showRequester?: boolean;
  /** Shows the links to share (the requester's own page). */
  showLinks?: boolean;
  /** The live region that reports a close. */
  status: HTMLElement;
}

/** A request's link to share: read-only, with Copy. */
export function linkToShare(link: UploadRequest['links'][number]): HTMLElement {
  const input = h('input', { type: 'text', readonly: true, value: link.url, class: 'link' });
  const slot = h('div', { class: 'status-slot' });
  const label = link.to ? t('requestLinkFor', { to: link.to }) : t('requestOpenLink');
  return h(
    'div',
    { class: 'link-row' },
    field(label, input),
    h(
      'button',
      {
        type: 'button',
        class: 'secondary',
        'aria-label': `${t('copyLink')}: ${label}`,
        onclick: () => copy(link.url, input, slot),
      },
      t('copyLink'),
    ),
    slot,
  );
}

function closeConfirm(o: RequestListOptions, r: UploadRequest, slot: HTMLElement, done: () => void): void {
  confirmInSlot(slot, {
    label: t('closeRequest'),
    question: t('closeRequestConfirm', { title: r.title }),
    yes: t('closeRequestYes', { title: r.title }),
    status: o.status,
    act: async () => {
      await o.close?.(r.id);
      swap(slot);
      say(o.status, 'success', t('requestClosedDone', { title: r.title }));
      done();
    },
  });
}

/** What arrived, loaded the first time the disclosure opens. */
function arrivedFiles(load: (id: string) => Promise<ArrivedFile[]>, r: UploadRequest): HTMLElement {
  const box = h('div', {}, h('p', { role: 'status' }, t('loading')));
  let loaded = false;
  const details = h(
    'details',
    { class: 'arrived' },
    h('summary', {}, t('requestFiles', { count: r.received.files })),
    box,
  );
  details.addEventListener('toggle', () => {
    if (!details.open || loaded) return;
    loaded = true;
    load(r.id).then(
      (files) =>
        swap(
          box,
          files.length
            ? h(
                'ul',
                { class: 'arrived-files' },
                files.map((f) =>
                  h(
                    'li',
                    {},
                    h('strong', {}, f.name),
                    ` · ${formatSize(f.length)} · ${t('requestFrom', { from: f.from ?? t('requestOpenLink') })} · `,
                    timeCell(f.time),
                  ),
                ),
              )
            : h('p', {}, t('requestNoFiles')),
        ),
      (err: unknown) => {
        loaded = false;
        swap(box, notice('error', errorText(err)));
      },
    );
  });
  return details;
}

function requestCard(o: RequestListOptions, r: UploadRequest, reload: () => void): HTMLElement {
  const headingId = nextId('request');
  const confirmSlot = h('div', {});
  const [words, tone] = STATE[r.state];
  const facts: [string, Node | string][] = [
    ...(o.showRequester ? ([[t('requestRequester'), r.user]] as [string, string][]) : []),
    [
      t('requestReceived'),
      t('requestAmount', { files: r.received.files, size: formatSize(r.received.bytes) }),
    ],
    [
      t('requestLimits'),
      t('requestLimitsText', {
        files: r.limits.maxFiles,
        file: formatSize(r.limits.maxFileBytes),
        total: formatSize(r.limits.maxTotalBytes),
      }),
    ],
    [t('requestExpiry'), timeCell(r.expires)],
  ];
  return h(
    'article',
    { class: 'card request', 'aria-labelledby': headingId },
    h('h3', { id: headingId }, r.title, ' ', badge(t(words), tone)),
    r.message ? h('p', { class: 'request-message' }, r.message) : null,
    h(
      'dl',
      { class: 'request-facts' },
      facts.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
    ),
    o.showLinks && r.state === 'open' ? r.links.map(linkToShare) : null,
    o.files ? arrivedFiles(o.files, r) : null,
    o.close && r.state === 'open'
      ? h(
          'div',
          { class: 'actions' },
          h(
            'button',
            {
              type: 'button',
              class: 'secondary small',
              'aria-label': t('closeRequestNamed', { title: r.title }),
              onclick: () => closeConfirm(o, r, confirmSlot, reload),
            },
            t('closeRequest'),
          ),
        )
      : null,
    confirmSlot,
  );
}

/** The requests as cards, loaded now and again by `reload()`. */
export function requestList(o: RequestListOptions): { element: HTMLElement; reload(): void } {
  const box = h('div', { class: 'request-list' }, h('p', { role: 'status' }, t('loading')));
  function reload(): void {
    o.load().then(
      (requests) =>
        swap(
          box,
          requests.length ? requests.map((r) => requestCard(o, r, reload)) : h('p', {}, t('noRequests')),
        ),
      (err: unknown) => swap(box, notice('error', errorText(err))),
    );
  }
  reload();
  return { element: box, reload };
}
