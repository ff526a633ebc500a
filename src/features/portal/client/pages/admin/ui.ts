// Building blocks of the admin console's pages: tables that become cards on a phone, lists paged
// by the API's cursor, filter forms kept in the address (#/audit?event=login), times in the
// viewer's zone.
import { errorText } from '../../api.js';
import { field, h, nextId, notice, swap } from '../../dom.js';
import { currentLang, LOCALES, type MessageKey, t } from '../../i18n.js';

/** An ISO time of the API in the viewer's zone (the browser's), or a dash. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return t('none');
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  return new Intl.DateTimeFormat(LOCALES[currentLang()], { dateStyle: 'short', timeStyle: 'medium' }).format(
    new Date(ms),
  );
}

/** A <time> element: the viewer's local time, the machine-readable instant in `datetime`. */
export function timeCell(iso: string | null | undefined): Node {
  return iso ? h('time', { datetime: iso }, formatTime(iso)) : document.createTextNode(t('none'));
}

export interface Column<T> {
  label: string;
  cell(row: T): Node | string;
  /** e.g. 'num' (right-aligned), 'wide' */
  class?: string;
}

/**
 * A table on wide screens; under 40rem each row becomes a card whose cells carry their column's
 * name (data-label, shown by the stylesheet). The explicit roles keep the table for screen readers
 * when CSS turns its rows into blocks.
 */
export function dataTable<T>(caption: string, columns: Column<T>[], rows: T[]): HTMLElement {
  return h(
    'table',
    { class: 'grid', role: 'table' },
    h('caption', { class: 'visually-hidden' }, caption),
    h(
      'thead',
      { role: 'rowgroup' },
      h(
        'tr',
        { role: 'row' },
        columns.map((c) => h('th', { scope: 'col', role: 'columnheader', class: c.class ?? null }, c.label)),
      ),
    ),
    h(
      'tbody',
      { role: 'rowgroup' },
      rows.map((row) =>
        h(
          'tr',
          { role: 'row' },
          columns.map((c) =>
            h('td', { role: 'cell', class: c.class ?? null, 'data-label': c.label }, c.cell(row)),
          ),
        ),
      ),
    ),
  );
}

export interface Page<T> {
  items: T[];
  next: string | null;
}

/**
 * A list paged by cursor: loads the first page, then Previous / Next (the cursors seen so far are
 * kept, so Previous goes back without the API paging backwards).
 */
export function cursorList<T>(
  load: (cursor: string | undefined) => Promise<Page<T>>,
  draw: (items: T[]) => Node,
): HTMLElement {
  const box = h('div', { class: 'paged', tabindex: -1 }, h('p', { role: 'status' }, t('loading')));
  const cursors: (string | undefined)[] = [undefined];
  const show = (index: number, focus: boolean) => {
    load(cursors[index]).then(
      (page) => {
        cursors.length = index + 1;
        if (page.next) cursors.push(page.next);
        const more = page.next !== null && page.items.length > 0;
        swap(
          box,
          page.items.length ? draw(page.items) : h('p', {}, t('nothingFound')),
          index > 0 || more ? pager(index, more, (i) => show(i, true)) : null,
        );
        if (focus) box.focus();
      },
      (err: unknown) => swap(box, notice('error', errorText(err))),
    );
  };
  show(0, false);
  return box;
}

function pager(index: number, more: boolean, go: (index: number) => void): HTMLElement {
  return h(
    'nav',
    { class: 'pager', 'aria-label': t('paging') },
    h(
      'button',
      { type: 'button', class: 'secondary', disabled: index === 0, onclick: () => go(index - 1) },
      t('previousPage'),
    ),
    h('span', { 'aria-current': 'page' }, t('pageN', { page: index + 1 })),
    h(
      'button',
      { type: 'button', class: 'secondary', disabled: !more, onclick: () => go(index + 1) },
      t('nextPage'),
    ),
  );
}

export type FilterField =
  | { name: string; label: MessageKey; kind: 'text' | 'number' | 'datetime'; hint?: MessageKey }
  | { name: string; label: MessageKey; kind: 'select'; options: [string, MessageKey][] };

/** `YYYY-MM-DDTHH:mm` in the viewer's zone, for a datetime-local input, from an ISO instant. */
function localInputValue(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

function filterInput(f: FilterField, value: string): HTMLInputElement | HTMLSelectElement {
  if (f.kind === 'select') {
    const options: [string, string][] = [
      ['', t('anyValue')],
      ...f.options.map(([v, k]): [string, string] => [v, t(k)]),
    ];
    return h(
      'select',
      { name: f.name },
      options.map(([v, label]) => h('option', { value: v, selected: v === value }, label)),
    );
  }
  if (f.kind === 'datetime')
    return h('input', { name: f.name, type: 'datetime-local', value: value ? localInputValue(value) : '' });
  const attrs = f.kind === 'number' ? { inputmode: 'numeric', pattern: '[0-9]*' } : {};
  return h('input', {
    name: f.name,
    type: 'text',
    value,
    autocomplete: 'off',
    spellcheck: 'false',
    ...attrs,
  });
}

/**
 * A search form whose values live in the address: submitting goes to `#{path}?…`, so a search can
 * be bookmarked, and Back returns to the previous one. Local times become ISO instants (UTC).
 */
export function filterForm(
  path: string,
  fields: FilterField[],
  params: URLSearchParams,
  go: (hash: string) => void,
): HTMLFormElement {
  const inputs = fields.map((f) => ({ f, input: filterInput(f, params.get(f.name) ?? '') }));
  const submit = (e: Event) => {
    e.preventDefault();
    const next = new URLSearchParams();
    for (const { f, input } of inputs) {
      const v = input.value.trim();
      if (!v) continue;
      next.set(f.name, f.kind === 'datetime' ? new Date(v).toISOString() : v);
    }
    const qs = next.toString();
    go(`#${path}${qs ? `?${qs}` : ''}`);
  };
  const id = nextId('filters');
  return h(
    'form',
    { class: 'card filters', role: 'search', 'aria-labelledby': id, onsubmit: submit },
    h('h2', { id }, t('filters')),
    h(
      'div',
      { class: 'filter-grid' },
      inputs.map(({ f, input }) => field(t(f.label), input, 'hint' in f && f.hint ? t(f.hint) : undefined)),
    ),
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'submit' }, t('search')),
      h('a', { class: 'button secondary', href: `#${path}` }, t('clearFilters')),
    ),
  );
}

/** The non-empty values of `params` named in `names`, as an API query. */
export function queryOf(params: URLSearchParams, names: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const n of names) {
    const v = params.get(n);
    if (v) out[n] = v;
  }
  return out;
}

/** A small coloured word (a state, a status): the text says it, colour only repeats it. */
export function badge(text: string, tone: 'ok' | 'warn' | 'bad' | 'muted' = 'muted'): HTMLElement {
  return h('span', { class: `badge ${tone}` }, text);
}
