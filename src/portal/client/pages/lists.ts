// Received (GET {base}/download/list?page=N) and Backup (GET {base}/download/list/backup?page=N):
// name, size, date and a download link per file, 100 files a page with previous/next. Under a file
// that was announced to recipients: who, whether the message went out, whether they downloaded,
// and "Resend" (POST {base}/download/resend?k=<owner token>&to=<recipient id>).
import { call, errorText, type FileEntry, type RecipientStatus } from '../api.js';
import { h, notice, pageHeading, put, swap } from '../dom.js';
import { formatDate, formatSize } from '../format.js';
import { t } from '../i18n.js';
import type { PageContext } from '../page-context.js';

const PAGE_SIZE = 100;
const pages: Record<'area' | 'backup', number> = { area: 1, backup: 1 };

/**
 * A browser opening an area link gets the recipient landing page; `dl=1` asks for the bytes
 * (docs/portal.md). Backup links are never redirected, so they are used as they are.
 */
export function directDownloadUrl(linkURL: string): string {
  const url = new URL(linkURL, location.href);
  if (/\/download\/file$/.test(url.pathname)) url.searchParams.set('dl', '1');
  return url.toString();
}

function deliveryText(r: RecipientStatus): string {
  if (r.status === 'sent') return t('deliverySent');
  if (r.status === 'failed') return t('deliveryFailed', { reason: r.reason ?? '' });
  return t('deliveryPending');
}

function downloadText(r: RecipientStatus): string {
  if (r.downloads.complete)
    return t('downloadedTimes', { count: r.downloads.count, date: formatDate(r.downloads.last ?? 0) });
  return r.downloads.count > 0 ? t('downloadStarted') : t('notDownloaded');
}

/** The row under a file listing its recipients, each with a Resend button once not pending. */
function recipientsRow(f: FileEntry, recipients: RecipientStatus[], refresh: () => void): HTMLElement {
  const k = new URL(f.linkURL, location.href).searchParams.get('k') ?? '';
  const status = h('p', { role: 'status', class: 'hint' });
  const resend = (r: RecipientStatus, button: HTMLButtonElement) => {
    button.disabled = true;
    call('/download/resend', { method: 'POST', query: { k, to: String(r.id) } }).then(
      () => {
        swap(status, t('resent', { address: r.address }));
        setTimeout(refresh, 1500);
      },
      (err: unknown) => {
        button.disabled = false;
        swap(status, notice('error', errorText(err)));
      },
    );
  };
  return h(
    'tr',
    { class: 'recipients' },
    h(
      'td',
      { colspan: 4 },
      h(
        'ul',
        { 'aria-label': t('recipientsOf', { name: f.name }) },
        recipients.map((r) => {
          const button =
            r.status === 'pending'
              ? null
              : h(
                  'button',
                  {
                    type: 'button',
                    class: 'secondary small',
                    'aria-label': t('resendTo', { address: r.address }),
                  },
                  t('resend'),
                );
          button?.addEventListener('click', () => resend(r, button));
          return h(
            'li',
            { class: `delivery ${r.status}` },
            h(
              'span',
              { class: 'address' },
              `${r.address} (${t(r.channel === 'email' ? 'channelEmail' : 'channelSms')})`,
            ),
            h('span', { class: 'state message' }, deliveryText(r)),
            h('span', { class: 'state' }, downloadText(r)),
            button,
          );
        }),
      ),
      status,
    ),
  );
}

function table(files: FileEntry[], refresh: () => void): HTMLElement {
  return h(
    'table',
    { class: 'files' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'col' }, t('name')),
        h('th', { scope: 'col', class: 'num' }, t('size')),
        h('th', { scope: 'col', class: 'date' }, t('date')),
        h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, t('actions'))),
      ),
    ),
    h(
      'tbody',
      {},
      files.flatMap((f) => [
        h(
          'tr',
          {},
          h('td', { class: 'name' }, f.name, h('span', { class: 'date-inline' }, formatDate(f.modified))),
          h('td', { class: 'num' }, formatSize(f.length)),
          h('td', { class: 'date' }, formatDate(f.modified)),
          h(
            'td',
            {},
            h(
              'a',
              { class: 'button small', href: directDownloadUrl(f.linkURL) },
              t('download'),
              h('span', { class: 'visually-hidden' }, ` ${f.name}`),
            ),
          ),
        ),
        f.recipients?.length ? recipientsRow(f, f.recipients, refresh) : null,
      ]),
    ),
  );
}

export function renderFileList(ctx: PageContext, area: 'area' | 'backup'): void {
  const page = pages[area];
  const body = h('div', { class: 'card' }, h('p', { role: 'status' }, t('loading')));
  put(
    ctx.main,
    pageHeading(t(area === 'area' ? 'receivedTitle' : 'backupTitle')),
    area === 'backup' ? h('p', {}, t('backupIntro')) : null,
    body,
  );
  const go = (p: number) => {
    pages[area] = p;
    ctx.refresh();
    ctx.main.querySelector('h1')?.focus();
  };
  call<{ files?: FileEntry[] }>(area === 'area' ? '/download/list' : '/download/list/backup', {
    auth: 'bearer',
    query: { page },
  }).then(
    (res) => {
      const files = res.files ?? [];
      if (files.length === 0 && page > 1) return go(page - 1);
      const more = files.length >= PAGE_SIZE;
      swap(
        body,
        files.length ? table(files, () => ctx.refresh()) : h('p', {}, t('noFilesHere')),
        page > 1 || more
          ? h(
              'nav',
              { class: 'pager', 'aria-label': t('paging') },
              h(
                'button',
                { type: 'button', class: 'secondary', disabled: page <= 1, onclick: () => go(page - 1) },
                t('previousPage'),
              ),
              h('span', { 'aria-current': 'page' }, t('pageN', { page })),
              h(
                'button',
                { type: 'button', class: 'secondary', disabled: !more, onclick: () => go(page + 1) },
                t('nextPage'),
              ),
            )
          : null,
      );
    },
    (err: unknown) => swap(body, notice('error', errorText(err))),
  );
}
