// SVG charts of the table page, drawn with plain DOM calls (no library). Colours are presentation
// attributes, not style attributes: the page's content security policy allows no inline style.

const SVG = 'http://www.w3.org/2000/svg';

type Attrs = Record<string, string | number>;

export function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Attrs = {}, text?: string): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

const INK = '#1f2933';
const MUTED = '#7b8794';
const GRID = '#e4e7eb';
const ICEBERG = '#2d6cdf';
const DELTA = '#0f9d76';
const WARN = '#c2410c';

export interface TimelineEntry {
  snapshotId: string | null;
  deltaVersion: number | null;
  timestamp: string;
  operation: string;
  addedRecords: number;
  totalRecords: number;
}

/**
 * The snapshot timeline, oldest left: one mark per Iceberg snapshot on the upper track, the Delta
 * version mirroring it on the lower track, joined by a line; a snapshot no Delta version mirrors
 * has a hollow orange mark and "no Delta version" below.
 */
export function timeline(entries: TimelineEntry[]): SVGSVGElement {
  const step = 96;
  const left = 70;
  const width = Math.max(480, left + step * Math.max(entries.length - 1, 0) + 80);
  const height = 170;
  const ice = 50;
  const del = 120;
  const root = svg('svg', { class: 'chart timeline', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `${entries.length} snapshots and their Delta versions` });
  root.append(svg('text', { x: 4, y: ice + 4, fill: ICEBERG, 'font-size': 12, 'font-weight': 600 }, 'Iceberg'));
  root.append(svg('text', { x: 4, y: del + 4, fill: DELTA, 'font-size': 12, 'font-weight': 600 }, 'Delta'));
  const end = left + step * Math.max(entries.length - 1, 0);
  root.append(svg('line', { x1: left, y1: ice, x2: end, y2: ice, stroke: GRID, 'stroke-width': 3 }));
  root.append(svg('line', { x1: left, y1: del, x2: end, y2: del, stroke: GRID, 'stroke-width': 3 }));
  entries.forEach((e, i) => {
    const x = left + step * i;
    const g = svg('g', { class: 'snapshot', 'data-snapshot-id': e.snapshotId ?? '', 'data-delta-version': e.deltaVersion ?? '' });
    const mirrored = e.deltaVersion !== null;
    if (mirrored) g.append(svg('line', { x1: x, y1: ice + 8, x2: x, y2: del - 8, stroke: MUTED, 'stroke-dasharray': '3 3' }));
    const title = svg('title', {}, `snapshot ${e.snapshotId ?? '—'} · ${e.operation} · ${new Date(e.timestamp).toLocaleString()} · +${e.addedRecords} rows, ${e.totalRecords} in all${mirrored ? ` · Delta version ${e.deltaVersion}` : ' · no Delta version'}`);
    g.append(title);
    g.append(svg('circle', { class: 'snap-mark', cx: x, cy: ice, r: 8, fill: ICEBERG, stroke: '#fff', 'stroke-width': 2 }));
    g.append(svg('text', { x, y: ice - 16, 'text-anchor': 'middle', 'font-size': 11, fill: INK }, e.operation));
    g.append(svg('text', { x, y: ice - 30, 'text-anchor': 'middle', 'font-size': 10, fill: MUTED }, shortId(e.snapshotId)));
    if (mirrored) {
      g.append(svg('rect', { class: 'delta-mark', x: x - 8, y: del - 8, width: 16, height: 16, rx: 3, fill: DELTA }));
      g.append(svg('text', { class: 'delta-label', x, y: del + 26, 'text-anchor': 'middle', 'font-size': 12, fill: INK }, `v${e.deltaVersion}`));
    } else {
      g.append(svg('rect', { class: 'delta-missing', x: x - 8, y: del - 8, width: 16, height: 16, rx: 3, fill: '#fff', stroke: WARN, 'stroke-width': 2 }));
      g.append(svg('text', { class: 'delta-label', x, y: del + 26, 'text-anchor': 'middle', 'font-size': 11, fill: WARN }, 'no Delta version'));
    }
    g.append(svg('text', { x, y: del + 42, 'text-anchor': 'middle', 'font-size': 10, fill: MUTED }, new Date(e.timestamp).toLocaleTimeString()));
    root.append(g);
  });
  return root;
}

function shortId(id: string | null): string {
  if (id === null) return '—';
  return id.length > 8 ? `…${id.slice(-6)}` : id;
}

export interface Bin {
  from: number;
  to: number;
  count: number;
}

/**
 * Sturges' rule: ceil(log2 n) + 1 equal-width bins over [min, max] (one bin when every file has
 * the same size); the last bin includes max.
 */
export function bins(sizes: number[]): Bin[] {
  if (sizes.length === 0) return [];
  const min = Math.min(...sizes);
  const max = Math.max(...sizes);
  if (min === max) return [{ from: min, to: max, count: sizes.length }];
  const k = Math.ceil(Math.log2(sizes.length)) + 1;
  const width = (max - min) / k;
  const out: Bin[] = Array.from({ length: k }, (_, i) => ({ from: min + i * width, to: i === k - 1 ? max : min + (i + 1) * width, count: 0 }));
  for (const s of sizes) out[Math.min(k - 1, Math.floor((s - min) / width))]!.count++;
  return out;
}

/** File sizes as a histogram: how many live data files fall in each size range. */
export function histogram(sizes: number[], target?: number): SVGSVGElement {
  const data = bins(sizes);
  const width = 560;
  const height = 220;
  const pad = { left: 44, right: 12, top: 16, bottom: 46 };
  const w = width - pad.left - pad.right;
  const h = height - pad.top - pad.bottom;
  const root = svg('svg', { class: 'chart histogram', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `file sizes of ${sizes.length} files in ${data.length} bins` });
  const top = Math.max(1, ...data.map((b) => b.count));
  for (const t of ticks(top)) {
    const y = pad.top + h - (t / top) * h;
    root.append(svg('line', { x1: pad.left, x2: pad.left + w, y1: y, y2: y, stroke: GRID }));
    root.append(svg('text', { x: pad.left - 6, y: y + 4, 'text-anchor': 'end', 'font-size': 11, fill: MUTED }, String(t)));
  }
  const bw = w / Math.max(1, data.length);
  data.forEach((b, i) => {
    const bh = (b.count / top) * h;
    const x = pad.left + i * bw;
    const rect = svg('rect', { class: 'hist-bar', x: x + 1, y: pad.top + h - bh, width: Math.max(1, bw - 2), height: bh, fill: ICEBERG, 'data-count': b.count, 'data-from': Math.round(b.from), 'data-to': Math.round(b.to) });
    rect.append(svg('title', {}, `${b.count} file${b.count === 1 ? '' : 's'} of ${formatBytes(Math.round(b.from))} – ${formatBytes(Math.round(b.to))}`));
    root.append(rect);
    if (b.count > 0) root.append(svg('text', { x: x + bw / 2, y: pad.top + h - bh - 4, 'text-anchor': 'middle', 'font-size': 11, fill: INK }, String(b.count)));
  });
  root.append(svg('line', { x1: pad.left, x2: pad.left + w, y1: pad.top + h, y2: pad.top + h, stroke: INK }));
  const first = data[0];
  const last = data[data.length - 1];
  if (first && last) {
    root.append(svg('text', { x: pad.left, y: pad.top + h + 16, 'font-size': 11, fill: MUTED }, formatBytes(Math.round(first.from))));
    root.append(svg('text', { x: pad.left + w, y: pad.top + h + 16, 'text-anchor': 'end', 'font-size': 11, fill: MUTED }, formatBytes(Math.round(last.to))));
  }
  root.append(svg('text', { x: pad.left + w / 2, y: height - 8, 'text-anchor': 'middle', 'font-size': 12, fill: INK }, target ? `file size (compaction target ${formatBytes(target)})` : 'file size'));
  return root;
}

function ticks(top: number): number[] {
  const step = Math.max(1, Math.ceil(top / 4));
  const out: number[] = [];
  for (let t = 0; t <= top; t += step) out.push(t);
  return out;
}

export interface PartitionBar {
  label: string;
  bytes: number;
  files: number;
  records: number;
}

/** Partition sizes as horizontal bars, largest first, each with its bytes, files and rows. */
export function partitionBars(parts: PartitionBar[]): SVGSVGElement {
  const row = 28;
  const labelW = 130;
  const barW = 240;
  const width = labelW + barW + 170;
  const height = Math.max(1, parts.length) * row + 8;
  const root = svg('svg', { class: 'chart partitions', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `${parts.length} partitions by size` });
  const top = Math.max(1, ...parts.map((p) => p.bytes));
  parts.forEach((p, i) => {
    const y = 4 + i * row;
    root.append(svg('text', { x: labelW - 8, y: y + 17, 'text-anchor': 'end', 'font-size': 12, fill: INK }, p.label));
    const rect = svg('rect', { class: 'part-bar', x: labelW, y: y + 4, width: Math.max(2, (p.bytes / top) * barW), height: row - 10, rx: 2, fill: DELTA, 'data-partition': p.label, 'data-bytes': p.bytes, 'data-files': p.files });
    rect.append(svg('title', {}, `${p.label}: ${formatBytes(p.bytes)} in ${p.files} files, ${p.records} rows`));
    root.append(rect);
    root.append(svg('text', { x: labelW + Math.max(2, (p.bytes / top) * barW) + 6, y: y + 17, 'font-size': 11, fill: MUTED }, `${formatBytes(p.bytes)} · ${p.files} file${p.files === 1 ? '' : 's'} · ${p.records} rows`));
  });
  return root;
}
