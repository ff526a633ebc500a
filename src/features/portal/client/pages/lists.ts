// Received (GET {base}/download/list?page=N) and Backup (GET {base}/download/list/backup?page=N):
// name, size, date and a download link per file, 100 files a page with previous/next. Under a file
// that was announced to recipients: who, whether the message went out, whether they downloaded,
// their link's own state, and "Resend" (POST {base}/download/resend?k=<owner token>&to=<recipient
// id>). Under each file in the area, the sender's controls (file-controls.ts).

import { isLoggedReason } from '../../../notify/delivery-reasons.js';
import { call, errorText, type FileEntry, type RecipientStatus } from '../api.js';
import { h, notice, pageHeading, put, say, swap } from '../dom.js';
import { formatDate, formatSize } from '../format.js';
import { t } from '../i18n.js';
import type { PageContext } from '../page-context.js';
import { type FileControls, fileActions, linkState, ownerToken, recipientActions } from './file-controls.js';
import { usageLine } from './usage.js';

const PAGE_SIZE = 100;
const pages: Record<'area' | 'backup', number> = { area: 1, backup: 1 };
/** What the list says at its top once drawn again after a change ("report.pdf was deleted."). */
let carried: string | null = null;

/**
 * A browser opening an area link gets the recipient landing page; `dl=1` asks for the bytes
 * (docs/portal.md). Backup links are never redirected, so they are used as they are.
 */
export function directDownloadUrl(linkURL: string): string {
  const url = new URL(linkURL, location.href);
  if (/\/download\/file$/.test(url.pathname)) url.searchParams.set('dl', '1');
  return url.toString();
}

/**
 * The delivery line in the page's language. The server's reason (a transport's answer, in
 * English) stays a tooltip; a message only written to the server log is not a failure.
 */
function delivery(r: RecipientStatus): { state: string; text: string } {
  const sms = r.channel === 'sms';
  if (r.status === 'sent') return { state: 'sent', text: t('deliverySent') };
  if (r.status === 'failed' && isLoggedReason(r.reason))
    return { state: 'logged', text: t(sms ? 'deliveryLoggedSms' : 'deliveryLoggedEmail') };
  if (r.status === 'failed')
    return { state: 'failed', text: t(sms ? 'deliveryFailedSms' : 'deliveryFailedEmail') };
  return { state: 'pending', text: t('deliveryPending') };
}

/** Lets a long file name wrap after its separators (never inside a word): a <wbr> after each. */
function breakableName(name: string): (string | HTMLElement)[] {
  return name.split(/(?<=[-_.\s])/).flatMap((part, i) => (i === 0 ? [part] : [h('wbr'), part]));
}

function downloadText(r: RecipientStatus): string {
  if (r.downloads.complete)
    return t('downloadedTimes', { count: r.downloads.count, date: formatDate(r.downloads.last ?? 0) });
  return r.downloads.count > 0 ? t('downloadStarted') : t('notDownloaded');
}

/** One recipient's line: address, message, downloads, the link's own state, and its buttons. */
function recipientItem(
  r: RecipientStatus,
  controls: FileControls | null,
  resend: (r: RecipientStatus, b: HTMLButtonElement) => void,
): HTMLElement {
  const button =
    r.status === 'pending' || r.revoked
      ? null
      : h(
          'button',
          { type: 'button', class: 'secondary small', 'aria-label': t('resendTo', { address: r.address }) },
          t('resend'),
        );
  button?.addEventListener('click', () => resend(r, button));
  const d = delivery(r);
  return h(
    'li',
    { class: `delivery ${d.state}` },
    h(
      'span',
      { class: 'address' },
      `${r.address} (${t(r.channel === 'email' ? 'channelEmail' : 'channelSms')})`,
    ),
    h('span', { class: 'state message', title: r.reason }, d.text),
    h('span', { class: 'state' }, downloadText(r)),
    linkState(r).map((s) => h('span', { class: `state link-state${s.ended ? ' ended' : ''}` }, s.text)),
    button,
    controls ? recipientActions(controls, r) : null,
  );
}

/**
 * The row under a file: its recipients, each with Resend once not pending, and in the area the
 * sender's controls (file-controls.ts) with the panel where their confirmations and forms open.
 */
function detailsRow(
  f: FileEntry,
  area: 'area' | 'backup',
  refresh: (message?: string) => void,
): HTMLElement | null {
  const recipients = f.recipients ?? [];
  if (area !== 'area' && recipients.length === 0) return null;
  const k = ownerToken(f);
  const status = h('div', { class: 'status-slot' });
  const panel = h('div', { class: 'panel' });
  const controls: FileControls | null =
    area === 'area' ? { file: f, k, panel, status, changed: (message) => refresh(message) } : null;
  const resend = (r: RecipientStatus, button: HTMLButtonElement) => {
    button.disabled = true;
    call('/download/resend', { method: 'POST', query: { k, to: String(r.id) } }).then(
      () => {
        say(status, 'info', t('resent', { address: r.address }));
        setTimeout(refresh, 1500);
      },
      (err: unknown) => {
        button.disabled = false;
        say(status, 'error', errorText(err));
      },
    );
  };
  return h(
    'tr',
    { class: 'recipients', role: 'row' },
    h(
      'td',
      { colspan: 4, role: 'cell', 'aria-label': t('fileControlsOf', { name: f.name }) },
      recipients.length
        ? h(
            'ul',
            { 'aria-label': t('recipientsOf', { name: f.name }) },
            recipients.map((r) => recipientItem(r, controls, resend)),
          )
        : null,
      controls ? fileActions(controls) : null,
      status,
      panel,
    ),
  );
}

/**
 * A table on wide screens; under 40rem each file becomes a card (name on a line of its own, then
 * size and the Download button), so names are never squeezed into a narrow column. The explicit
 * roles keep the table's meaning for screen readers when CSS turns its rows into blocks.
 */
function table(
  files: FileEntry[],
  area: 'area' | 'backup',
  refresh: (message?: string) => void,
): HTMLElement {
  return h(
    'table',
    { class: 'files', role: 'table' },
    h(
      'thead',
      { role: 'rowgroup' },
      h(
        'tr',
        { role: 'row' },
        h('th', { scope: 'col', role: 'columnheader', class: 'name' }, t('name')),
        h('th', { scope: 'col', role: 'columnheader', class: 'num' }, t('size')),
        h('th', { scope: 'col', role: 'columnheader', class: 'date' }, t('date')),
        h(
          'th',
          { scope: 'col', role: 'columnheader', class: 'act' },
          h('span', { class: 'visually-hidden' }, t('actions')),
        ),
      ),
    ),
    h(
      'tbody',
      { role: 'rowgroup' },
      files.flatMap((f) => [
        h(
          'tr',
          { role: 'row', class: 'file' },
          h(
            'td',
            { role: 'cell', class: 'name' },
            h('span', { class: 'file-name', title: f.name }, breakableName(f.name)),
            h('span', { class: 'date-inline' }, formatDate(f.modified)),
          ),
          h('td', { role: 'cell', class: 'num' }, formatSize(f.length)),
          h('td', { role: 'cell', class: 'date' }, formatDate(f.modified)),
          h(
            'td',
            { role: 'cell', class: 'act' },
            h(
              'a',
              { class: 'button small', href: directDownloadUrl(f.linkURL) },
              t('download'),
              h('span', { class: 'visually-hidden' }, ` ${f.name}`),
            ),
          ),
        ),
        detailsRow(f, area, refresh),
      ]),
    ),
  );
}

export function renderFileList(ctx: PageContext, area: 'area' | 'backup'): void {
  const page = pages[area];
  const body = h('div', { class: 'card' }, h('p', { role: 'status' }, t('loading')));
  const said = carried ? notice('success', carried) : null;
  said?.setAttribute('tabindex', '-1');
  carried = null;
  put(
    ctx.main,
    pageHeading(t(area === 'area' ? 'receivedTitle' : 'backupTitle')),
    area === 'backup' ? h('p', {}, t('backupIntro')) : null,
    usageLine(),
    said,
    body,
  );
  // After a change the list is drawn again; its message is said at the top, and focus goes there
  // (the control that had it is gone with the old list).
  const refresh = (message?: string) => {
    carried = message ?? null;
    ctx.refresh();
    if (message) document.querySelector<HTMLElement>('main .notice-success')?.focus();
  };
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
        files.length ? table(files, area, refresh) : h('p', {}, t('noFilesHere')),
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
