// A file's timeline: GET {base}/admin/files/{id}/timeline, the file and its events in time order
// (upload, each message queued, sent or failed, PIN requests, downloads, retire, purge). A failed
// message links to the outbox's failed messages, where an admin retries it. An admin deletes the
// file here (file-delete.ts).
import { errorText } from '../../api.js';
import { h, notice, put, swap } from '../../dom.js';
import { formatSize } from '../../format.js';
import { t } from '../../i18n.js';
import { admin, detailText, type TimelineEntry, type Transfer } from './admin-api.js';
import { type AdminPage, pageTop } from './admin-page.js';
import { type DeleteSlots, deleteButton } from './file-delete.js';
import { FILE_STATE, fileLabel, statusBadge } from './transfers.js';
import { timeCell } from './ui.js';

function fileDetails(f: Transfer): HTMLElement {
  const row = (label: string, value: Node | string) => h('div', {}, h('dt', {}, label), h('dd', {}, value));
  return h(
    'dl',
    { class: 'details' },
    row(t('name'), fileLabel(f)),
    row(t('size'), f.size === null ? t('none') : formatSize(f.size)),
    row(t('sha256'), h('code', { class: 'hash' }, f.sha256 ?? t('none'))),
    row(t('fileState'), t(FILE_STATE[f.state] ?? 'stateArea')),
    row(t('owner'), f.owner ?? t('none')),
    row(t('sender'), f.sender ?? t('none')),
    row(t('created'), timeCell(f.created)),
    row(t('expires'), timeCell(f.expires)),
    f.retired ? row(t('retired'), timeCell(f.retired)) : null,
    f.purged ? row(t('purged'), timeCell(f.purged)) : null,
    row(t('downloads'), String(f.downloads)),
  );
}

function entryItem(e: TimelineEntry): HTMLElement {
  const facts: (Node | string)[] = [];
  if (e.user) facts.push(h('span', {}, `${t('userOrActor')}: ${e.user}`));
  if (e.remote) facts.push(h('span', {}, `${t('remote')}: ${e.remote}`));
  if (e.channel) facts.push(h('span', {}, `${t('channel')}: ${e.channel}`));
  if (e.status) facts.push(statusBadge(e.status));
  if (e.attempts !== null && e.attempts !== undefined)
    facts.push(h('span', {}, t('attemptsN', { count: e.attempts })));
  const detail = detailText(e.detail);
  return h(
    'li',
    { class: `event ${e.source}${e.status === 'failed' ? ' failed' : ''}` },
    h('div', { class: 'event-head' }, timeCell(e.time), h('code', {}, e.event)),
    facts.length ? h('div', { class: 'facts' }, facts) : null,
    e.lastError ? h('p', { class: 'hint' }, `${t('lastError')}: ${e.lastError}`) : null,
    detail ? h('p', { class: 'hint' }, detail) : null,
  );
}

function timelineList(f: Transfer, entries: TimelineEntry[]): HTMLElement[] {
  const failed = entries.some((e) => e.source === 'outbox' && e.status === 'failed');
  return [
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'timeline-h' },
      h('h2', { id: 'timeline-h' }, t('timelineOf', { name: fileLabel(f) })),
      failed ? h('p', {}, h('a', { href: '#/outbox?status=failed' }, t('failedMessages'))) : null,
      entries.length ? h('ol', { class: 'timeline' }, entries.map(entryItem)) : h('p', {}, t('nothingFound')),
    ),
  ];
}

export function renderTimeline(page: AdminPage, id: string): void {
  const body = h('div', {}, h('p', { role: 'status' }, t('loading')));
  put(
    page.ctx.main,
    pageTop(page, t('timelineTitle', { id })),
    h('p', {}, h('a', { href: '#/transfers' }, t('backToTransfers'))),
    body,
  );
  admin<{ file?: Transfer; timeline?: TimelineEntry[] }>(`/files/${encodeURIComponent(id)}/timeline`).then(
    (res) => {
      if (!res.file) return swap(body, notice('error', t('errNotFound')));
      const slots: DeleteSlots = { status: h('div', { class: 'status-slot' }), confirm: h('div', {}) };
      const remove = deleteButton(page, res.file, slots, '#/transfers');
      swap(
        body,
        h(
          'section',
          { class: 'card' },
          fileDetails(res.file),
          slots.status,
          remove ? h('div', { class: 'actions' }, remove) : null,
          slots.confirm,
        ),
        timelineList(res.file, res.timeline ?? []),
      );
    },
    (err: unknown) => swap(body, notice('error', errorText(err))),
  );
}
