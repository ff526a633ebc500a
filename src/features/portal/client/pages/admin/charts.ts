// Charts in plain SVG (no library, no inline style: colours come from the stylesheet's classes).
// Each chart is an image with a name, a legend in words, and its numbers in a table under a
// disclosure, so nothing is only in the picture. Every bar and point carries its value
// (data-value) and a <title> with series, day and value.
import { h, nextId } from '../../dom.js';
import { t } from '../../i18n.js';

const NS = 'http://www.w3.org/2000/svg';
type SvgAttrs = Record<string, string | number>;

function s(tag: string, attrs: SvgAttrs = {}, ...children: (Node | string)[]): SVGElement {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(c);
  return el;
}

export interface Series {
  name: string;
  values: number[];
}

export interface ChartSpec {
  title: string;
  /** One label per bucket (the x axis). */
  labels: string[];
  series: Series[];
  /** How a value reads (a count, a size). */
  format(value: number): string;
  /** Counts get whole numbers on the axis; bytes 1, 2 or 5 KiB, MiB, GiB… */
  scale: 'count' | 'bytes';
  kind: 'bars' | 'lines';
}

/**
 * The picture is as wide as the screen allows (up to 640 units), so its 11-unit text stays about
 * 11 pixels on a phone too; its height is fixed.
 */
const MAX_W = 640;
const H = 240;
const LEFT = 64;
const RIGHT = 8;
const TOP = 12;
const BOTTOM = 28;
const PLOT_H = H - TOP - BOTTOM;

/** The width of a chart and of its plot area. */
interface Frame {
  w: number;
  plotW: number;
}

/**
 * The top of the y axis, at least `max`: 1, 2 or 5 times a power of ten (of a power of 1024 for
 * bytes); for counts under ten an even number, so the middle line is a whole number too.
 */
export function niceMax(max: number, scale: 'count' | 'bytes'): number {
  if (max <= 0) return scale === 'count' ? 2 : 1;
  if (scale === 'count' && max <= 10) return Math.max(2, Math.ceil(max) + (Math.ceil(max) % 2));
  let unit = 1;
  if (scale === 'bytes') while (max / unit >= 1024) unit *= 1024;
  const v = max / unit;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p * unit;
  return 10 * p * unit;
}

const round = (n: number) => Math.round(n * 100) / 100;

function axes(fr: Frame, top: number, format: (n: number) => string, labels: string[]): SVGElement {
  const g = s('g', { class: 'axes', 'aria-hidden': 'true' });
  for (const f of [0, 0.5, 1]) {
    const y = round(TOP + PLOT_H * (1 - f));
    g.append(
      s('line', { x1: LEFT, x2: fr.w - RIGHT, y1: y, y2: y, class: f === 0 ? 'axis' : 'grid-line' }),
      s('text', { x: LEFT - 6, y: y + 4, 'text-anchor': 'end' }, format(top * f)),
    );
  }
  const step = Math.max(1, Math.ceil(labels.length / Math.max(2, Math.floor(fr.plotW / 64))));
  const slot = fr.plotW / Math.max(1, labels.length);
  labels.forEach((label, i) => {
    if (i % step !== 0) return;
    const x = round(LEFT + slot * (i + 0.5));
    g.append(s('text', { x, y: H - 8, 'text-anchor': 'middle' }, label));
  });
  return g;
}

function bars(fr: Frame, spec: ChartSpec, top: number): SVGElement {
  const g = s('g', { class: 'marks' });
  const n = Math.max(1, spec.labels.length);
  const slot = fr.plotW / n;
  const width = (slot * 0.8) / spec.series.length;
  spec.series.forEach((series, si) => {
    series.values.forEach((value, i) => {
      const height = round((value / top) * PLOT_H);
      const x = round(LEFT + slot * i + slot * 0.1 + width * si);
      const tip = t('chartPoint', {
        series: series.name,
        day: spec.labels[i] ?? '',
        value: spec.format(value),
      });
      g.append(
        s(
          'rect',
          {
            class: `bar s${si}`,
            x,
            y: round(TOP + PLOT_H - height),
            width: round(width),
            height,
            'data-series': series.name,
            'data-index': i,
            'data-value': value,
          },
          s('title', {}, tip),
        ),
      );
    });
  });
  return g;
}

function lines(fr: Frame, spec: ChartSpec, top: number): SVGElement {
  const g = s('g', { class: 'marks' });
  const slot = fr.plotW / Math.max(1, spec.labels.length);
  spec.series.forEach((series, si) => {
    const points = series.values.map((value, i) => ({
      value,
      i,
      x: round(LEFT + slot * (i + 0.5)),
      y: round(TOP + PLOT_H - (value / top) * PLOT_H),
    }));
    g.append(s('polyline', { class: `line s${si}`, points: points.map((p) => `${p.x},${p.y}`).join(' ') }));
    for (const p of points) {
      const tip = t('chartPoint', {
        series: series.name,
        day: spec.labels[p.i] ?? '',
        value: spec.format(p.value),
      });
      g.append(
        s(
          'circle',
          {
            class: `point s${si}`,
            cx: p.x,
            cy: p.y,
            r: 3,
            'data-series': series.name,
            'data-index': p.i,
            'data-value': p.value,
          },
          s('title', {}, tip),
        ),
      );
    }
  });
  return g;
}

function numbersTable(spec: ChartSpec): HTMLElement {
  return h(
    'details',
    { class: 'chart-numbers' },
    h('summary', {}, t('chartNumbers')),
    h(
      'table',
      { class: 'numbers' },
      h('caption', { class: 'visually-hidden' }, spec.title),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', { scope: 'col' }, t('day')),
          spec.series.map((se) => h('th', { scope: 'col', class: 'num' }, se.name)),
        ),
      ),
      h(
        'tbody',
        {},
        spec.labels.map((label, i) =>
          h(
            'tr',
            {},
            h('th', { scope: 'row' }, label),
            spec.series.map((se) => h('td', { class: 'num' }, spec.format(se.values[i] ?? 0))),
          ),
        ),
      ),
    ),
  );
}

/** A chart as a figure: heading, the SVG picture, its legend and its numbers. */
export function chart(spec: ChartSpec): HTMLElement {
  const w = Math.round(Math.min(MAX_W, Math.max(300, window.innerWidth - 72)));
  const fr: Frame = { w, plotW: w - LEFT - RIGHT };
  const max = Math.max(0, ...spec.series.flatMap((se) => se.values));
  const top = niceMax(max, spec.scale);
  const titleId = nextId('chart');
  const svg = s(
    'svg',
    {
      class: `chart ${spec.kind}`,
      viewBox: `0 0 ${w} ${H}`,
      role: 'img',
      'aria-labelledby': titleId,
      'data-top': top,
    },
    s('title', { id: `${titleId}-svg` }, spec.title),
    axes(fr, top, spec.format, spec.labels),
    spec.kind === 'bars' ? bars(fr, spec, top) : lines(fr, spec, top),
  );
  return h(
    'figure',
    { class: 'card chart-card' },
    h('figcaption', { id: titleId }, h('h2', {}, spec.title)),
    svg as unknown as HTMLElement,
    h(
      'ul',
      { class: 'legend' },
      spec.series.map((se, i) =>
        h('li', {}, h('span', { class: `swatch s${i}`, 'aria-hidden': 'true' }), se.name),
      ),
    ),
    numbersTable(spec),
  );
}
