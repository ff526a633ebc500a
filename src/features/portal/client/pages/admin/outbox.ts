// Outbox: GET {base}/admin/outbox by status and channel, paged, without any message's text. An
// admin retries a failed message (POST {base}/admin/outbox/{id}/retry): it becomes pending and is
// sent once more.
import { errorText } from '../../api.js';
import { h, put, say, swap } from '../../dom.js';
import { t } from '../../i18n.js';
import { admin, messageOf, type OutboxMessage } from './admin-api.js';
import { type AdminPage, canChange, pageTop } from './admin-page.js';
import { timelineHref } from './audit.js';
import { statusBadge } from './transfers.js';
import { type Column, cursorList, dataTable, type FilterField, filterForm, queryOf, timeCell } from './ui.js';

const FIELDS: FilterField[] = [
  {
    name: 'status',
    label: 'status',
    kind: 'select',
    options: [
      ['pending', 'statusPending'],
      ['sent', 'statusSent'],
      ['failed', 'statusFailed'],
      ['logged', 'statusLogged'],
    ],
  },
  {
    name: 'channel',
    label: 'channel',
    kind: 'select',
    options: [
      ['email', 'channelEmail'],
      ['sms', 'channelSms'],
      ['webhook', 'channelWebhook'],
    ],
  },
];

function retryButton(m: OutboxMessage, status: HTMLElement): HTMLElement {
  const button = h(
    'button',
    {
      type: 'button',
      class: 'secondary small',
      'aria-label': t('retryMessage', { id: m.id, recipient: m.recipient }),
    },
    t('retry'),
  );
  button.addEventListener('click', () => {
    button.disabled = true;
    admin<{ message?: unknown }>(`/outbox/${m.id}/retry`, { method: 'POST' }).then(
      (res) => {
        const row = button.closest('tr');
        const cell = row?.querySelector('.msg-status');
        if (cell) swap(cell, statusBadge(messageOf(res)?.status ?? 'pending'));
        say(status, 'success', t('retried', { id: m.id }));
        button.replaceWith(h('span', { class: 'hint' }, t('statusPending')));
      },
      (err: unknown) => {
        button.disabled = false;
        say(status, 'error', errorText(err));
      },
    );
  });
  return button;
}

function outboxTable(page: AdminPage, status: HTMLElement) {
  return (messages: OutboxMessage[]): HTMLElement => {
    const columns: Column<OutboxMessage>[] = [
      { label: t('created'), cell: (m) => timeCell(m.created) },
      { label: t('kind'), cell: (m) => h('span', {}, h('code', {}, m.kind), ` (${m.channel})`) },
      { label: t('recipient'), cell: (m) => m.recipient },
      {
        label: t('status'),
        cell: (m) =>
          h(
            'span',
            { class: 'stack' },
            h('span', { class: 'msg-status' }, statusBadge(m.status)),
            h('span', {}, t('attemptsN', { count: m.attempts })),
            m.nextAttempt ? h('span', {}, `${t('nextAttempt')}: `, timeCell(m.nextAttempt)) : null,
          ),
      },
      { label: t('lastAttempt'), cell: (m) => timeCell(m.lastAttempt) },
      { label: t('lastError'), cell: (m) => m.lastError ?? t('none'), class: 'wide' },
      {
        label: t('file'),
        cell: (m) =>
          h(
            'span',
            { class: 'stack' },
            m.fileId === null
              ? t('none')
              : h('a', { href: timelineHref(m.fileId) }, t('fileN', { id: m.fileId })),
            m.user ? h('span', {}, m.user) : null,
          ),
        class: 'nowrap',
      },
    ];
    if (canChange(page))
      columns.push({
        label: t('actions'),
        cell: (m) => (m.status === 'failed' ? retryButton(m, status) : t('none')),
      });
    return dataTable(t('outboxTitle'), columns, messages);
  };
}

export function renderOutbox(page: AdminPage): void {
  const query = queryOf(
    page.params,
    FIELDS.map((f) => f.name),
  );
  const status = h('div', { class: 'status-slot' });
  const list = cursorList(
    async (cursor) => {
      const res = await admin<{ messages?: OutboxMessage[]; next?: string | null }>('/outbox', {
        query: { ...query, cursor },
      });
      return { items: res.messages ?? [], next: res.next ?? null };
    },
    outboxTable(page, status),
  );
  put(
    page.ctx.main,
    pageTop(page, t('outboxTitle')),
    filterForm('/outbox', FIELDS, page.params, page.ctx.go),
    status,
    h('section', { class: 'card', 'aria-label': t('outboxTitle') }, list),
  );
}
