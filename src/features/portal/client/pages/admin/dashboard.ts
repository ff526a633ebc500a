// Dashboard: GET {base}/admin/stats (by day) drawn as SVG charts (uploads and downloads, bytes,
// failures) with the totals. The period is the address's `days` (7, 30 or 90; 30 by default, the
// API's own default range, so the server's clock decides where today is).
import { errorText } from '../../api.js';
import { field, h, notice, put, swap } from '../../dom.js';
import { formatSize } from '../../format.js';
import { currentLang, LOCALES, t } from '../../i18n.js';
import { admin, type Stats, type StatsBucket } from './admin-api.js';
import { type AdminPage, pageTop } from './admin-page.js';
import { chart } from './charts.js';

const PERIODS = [7, 30, 90];
const DAY = 24 * 3600 * 1000;

function bucketLabel(stats: Stats, b: StatsBucket): string {
  // A day bucket is a UTC day: named by its date wherever the viewer is. Hours are the viewer's.
  const opts: Intl.DateTimeFormatOptions =
    stats.bucket === 'day'
      ? { day: 'numeric', month: 'short', timeZone: 'UTC' }
      : { hour: '2-digit', minute: '2-digit' };
  return new Intl.DateTimeFormat(LOCALES[currentLang()], opts).format(new Date(b.start));
}

const count = (n: number) => new Intl.NumberFormat(LOCALES[currentLang()]).format(n);

function totals(stats: Stats): HTMLElement {
  const sum = (k: keyof StatsBucket) => stats.series.reduce((acc, b) => acc + Number(b[k]), 0);
  const items: [string, string, string][] = [
    ['users', t('totalUsers'), count(stats.totals.users)],
    ['files', t('totalFiles'), count(stats.totals.files)],
    ['bytes', t('totalBytes'), formatSize(stats.totals.bytes)],
    ['uploads', t('periodUploads'), count(sum('uploads'))],
    ['downloads', t('periodDownloads'), count(sum('downloads'))],
  ];
  return h(
    'section',
    { class: 'totals', 'aria-label': t('totalsLabel') },
    h(
      'dl',
      {},
      items.map(([key, label, value]) =>
        h('div', { class: 'total', 'data-total': key }, h('dt', {}, label), h('dd', {}, value)),
      ),
    ),
  );
}

function charts(stats: Stats): HTMLElement[] {
  const labels = stats.series.map((b) => bucketLabel(stats, b));
  const values = (k: keyof StatsBucket) => stats.series.map((b) => Number(b[k]));
  return [
    chart({
      title: t('chartTransfers'),
      kind: 'bars',
      labels,
      format: count,
      scale: 'count',
      series: [
        { name: t('seriesUploads'), values: values('uploads') },
        { name: t('seriesDownloads'), values: values('downloads') },
      ],
    }),
    chart({
      title: t('chartBytes'),
      kind: 'lines',
      labels,
      format: formatSize,
      scale: 'bytes',
      series: [
        { name: t('seriesUploadBytes'), values: values('uploadBytes') },
        { name: t('seriesDownloadBytes'), values: values('downloadBytes') },
      ],
    }),
    chart({
      title: t('chartFailures'),
      kind: 'bars',
      labels,
      format: count,
      scale: 'count',
      series: [
        { name: t('seriesFailedSignIns'), values: values('failedSignIns') },
        { name: t('seriesLockouts'), values: values('lockouts') },
        { name: t('seriesNotificationFailures'), values: values('notificationFailures') },
      ],
    }),
  ];
}

function periodPicker(page: AdminPage, days: number): HTMLElement {
  const select = h(
    'select',
    { name: 'days' },
    PERIODS.map((d) => h('option', { value: d, selected: d === days }, t('lastDays', { days: d }))),
  );
  // A button, not a change handler: arrowing through the options must not reload the page.
  return h(
    'form',
    {
      class: 'period',
      onsubmit: (e) => {
        e.preventDefault();
        page.ctx.go(`#/?days=${select.value}`);
      },
    },
    field(t('period'), select),
    h('button', { type: 'submit', class: 'secondary' }, t('show')),
  );
}

export function renderDashboard(page: AdminPage): void {
  const asked = Number(page.params.get('days'));
  const days = PERIODS.includes(asked) ? asked : 30;
  const body = h('div', { class: 'dashboard' }, h('p', { role: 'status' }, t('loading')));
  put(page.ctx.main, pageTop(page, t('dashboardTitle')), periodPicker(page, days), body);
  let query: Record<string, string> = { bucket: 'day' };
  if (days !== 30) {
    const now = new Date();
    const end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
    query = { ...query, from: new Date(end - days * DAY).toISOString(), to: new Date(end).toISOString() };
  }
  admin<Stats>('/stats', { query }).then(
    (stats) => swap(body, totals(stats), charts(stats)),
    (err: unknown) => swap(body, notice('error', errorText(err))),
  );
}
