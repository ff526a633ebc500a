// Transfers: GET {base}/admin/files by user (owner or sender), state, part of the name and time,
// paged; each file opens its timeline (timeline.ts). An admin deletes a file (file-delete.ts).
import { h, put } from '../../dom.js';
import { formatSize } from '../../format.js';
import { type MessageKey, t } from '../../i18n.js';
import { admin, type Transfer } from './admin-api.js';
import { type AdminPage, canChange, pageTop } from './admin-page.js';
import { timelineHref } from './audit.js';
import { type DeleteSlots, deleteButton, fileLabelOf } from './file-delete.js';
import {
  badge,
  type Column,
  cursorList,
  dataTable,
  type FilterField,
  filterForm,
  queryOf,
  timeCell,
} from './ui.js';

const FIELDS: FilterField[] = [
  { name: 'user', label: 'userOrActor', kind: 'text' },
  { name: 'q', label: 'fileName', kind: 'text' },
  {
    name: 'state',
    label: 'fileState',
    kind: 'select',
    options: [
      ['area', 'stateArea'],
      ['backup', 'stateBackup'],
      ['purged', 'statePurged'],
    ],
  },
  { name: 'from', label: 'fromTime', kind: 'datetime' },
  { name: 'to', label: 'toTime', kind: 'datetime' },
];

export const FILE_STATE: Record<Transfer['state'], MessageKey> = {
  area: 'stateArea',
  backup: 'stateBackup',
  purged: 'statePurged',
};

export const STATUS_LABEL: Record<string, MessageKey> = {
  pending: 'statusPending',
  sent: 'statusSent',
  failed: 'statusFailed',
  logged: 'statusLogged',
};

export const statusBadge = (status: string) =>
  badge(
    STATUS_LABEL[status] ? t(STATUS_LABEL[status]) : status,
    status === 'failed' ? 'bad' : status === 'sent' ? 'ok' : 'muted',
  );

export const fileLabel = fileLabelOf;

function recipientsCell(f: Transfer): Node | string {
  if (f.recipients.length === 0) return t('none');
  return h(
    'ul',
    { class: 'plain' },
    f.recipients.map((r) => h('li', {}, `${r.address} `, statusBadge(r.status))),
  );
}

function transfersTable(page: AdminPage, slots: DeleteSlots, files: Transfer[]): HTMLElement {
  const columns: Column<Transfer>[] = [
    {
      label: t('name'),
      cell: (f) =>
        h(
          'a',
          { href: timelineHref(f.id), 'aria-label': t('timelineOf', { name: fileLabel(f) }) },
          fileLabel(f),
        ),
      class: 'wide',
    },
    { label: t('size'), cell: (f) => (f.size === null ? t('none') : formatSize(f.size)), class: 'num' },
    { label: t('owner'), cell: (f) => f.owner ?? t('none') },
    { label: t('sender'), cell: (f) => f.sender ?? t('none') },
    { label: t('fileState'), cell: (f) => t(FILE_STATE[f.state] ?? 'stateArea') },
    { label: t('created'), cell: (f) => timeCell(f.created) },
    { label: t('recipients'), cell: recipientsCell },
    { label: t('downloads'), cell: (f) => String(f.downloads), class: 'num' },
  ];
  const query = page.params.toString();
  const back = `#/transfers${query ? `?${query}` : ''}`;
  if (canChange(page))
    columns.push({ label: t('actions'), cell: (f) => deleteButton(page, f, slots, back) ?? '' });
  return dataTable(t('transfersTitle'), columns, files);
}

export function renderTransfers(page: AdminPage): void {
  const slots: DeleteSlots = { status: h('div', { class: 'status-slot' }), confirm: h('div', {}) };
  const query = queryOf(
    page.params,
    FIELDS.map((f) => f.name),
  );
  const list = cursorList(
    async (cursor) => {
      const res = await admin<{ files?: Transfer[]; next?: string | null }>('/files', {
        query: { ...query, cursor },
      });
      return { items: res.files ?? [], next: res.next ?? null };
    },
    (files) => transfersTable(page, slots, files),
  );
  put(
    page.ctx.main,
    pageTop(page, t('transfersTitle')),
    filterForm('/transfers', FIELDS, page.params, page.ctx.go),
    h('section', { class: 'card', 'aria-label': t('transfersTitle') }, slots.status, list, slots.confirm),
  );
}
