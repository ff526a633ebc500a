// Audit search: GET {base}/admin/audit by user, event, file, outcome and time, paged; "Export CSV"
// downloads the same search (format=csv). The API needs the bearer token, which a link cannot
// carry: the CSV is fetched, then saved from a Blob URL.
import { errorText, fetchBlob } from '../../api.js';
import { h, put, say } from '../../dom.js';
import { t } from '../../i18n.js';
import { type AuditEntry, admin, detailText } from './admin-api.js';
import { type AdminPage, pageTop } from './admin-page.js';
import { cursorList, dataTable, type FilterField, filterForm, queryOf, timeCell } from './ui.js';

const FIELDS: FilterField[] = [
  { name: 'user', label: 'userOrActor', kind: 'text' },
  { name: 'event', label: 'event', kind: 'text', hint: 'eventHint' },
  { name: 'file', label: 'fileId', kind: 'number' },
  {
    name: 'outcome',
    label: 'outcome',
    kind: 'select',
    options: [
      ['ok', 'outcomeOk'],
      ['failed', 'outcomeFailed'],
    ],
  },
  { name: 'from', label: 'fromTime', kind: 'datetime' },
  { name: 'to', label: 'toTime', kind: 'datetime' },
];
const NAMES = FIELDS.map((f) => f.name);

export const timelineHref = (id: number | string) => `#/transfers/${id}`;

function auditTable(entries: AuditEntry[]): HTMLElement {
  return dataTable(
    t('auditTitle'),
    [
      { label: t('time'), cell: (e) => timeCell(e.time) },
      { label: t('event'), cell: (e) => h('code', {}, e.event) },
      { label: t('userOrActor'), cell: (e) => e.user ?? t('none') },
      { label: t('actor'), cell: (e) => e.actor ?? t('none') },
      { label: t('remote'), cell: (e) => e.remote ?? t('none') },
      {
        label: t('file'),
        cell: (e) =>
          e.fileId === null
            ? t('none')
            : h('a', { href: timelineHref(e.fileId) }, t('fileN', { id: e.fileId })),
        class: 'nowrap',
      },
      { label: t('detail'), cell: (e) => detailText(e.detail), class: 'wide' },
    ],
    entries,
  );
}

/** Saves `blob` as `name` through a temporary Blob URL. */
export function saveBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: name, class: 'visually-hidden' });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

function exportButton(query: Record<string, string>): HTMLElement {
  const status = h('div', { class: 'status-slot' });
  const button = h('button', { type: 'button', class: 'secondary' }, t('exportCsv'));
  button.addEventListener('click', async () => {
    button.disabled = true;
    try {
      saveBlob(await fetchBlob('/admin/audit', { ...query, format: 'csv' }), 'audit.csv');
      say(status, 'success', t('csvDone'));
    } catch (err) {
      say(status, 'error', errorText(err));
    } finally {
      button.disabled = false;
    }
  });
  return h('div', { class: 'export' }, h('div', { class: 'actions' }, button), status);
}

export function renderAudit(page: AdminPage): void {
  const query = queryOf(page.params, NAMES);
  const list = cursorList(async (cursor) => {
    const res = await admin<{ entries?: AuditEntry[]; next?: string | null }>('/audit', {
      query: { ...query, cursor },
    });
    return { items: res.entries ?? [], next: res.next ?? null };
  }, auditTable);
  put(
    page.ctx.main,
    pageTop(page, t('auditTitle')),
    filterForm('/audit', FIELDS, page.params, page.ctx.go),
    exportButton(query),
    h('section', { class: 'card', 'aria-label': t('auditTitle') }, list),
  );
}
