// Received (GET {base}/download/list?page=N) and Backup (GET {base}/download/list/backup?page=N):
// name, size, date and a download link per file, 100 files a page with previous/next.
import { call, errorText, type FileEntry } from '../api.js';
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

function table(files: FileEntry[]): HTMLElement {
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
      files.map((f) =>
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
      ),
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
        files.length ? table(files) : h('p', {}, t('noFilesHere')),
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
