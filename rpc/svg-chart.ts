/**
 * Sizes in human units and small hand-written SVG charts, shared by the consoles (the master's apply
 * timeline) and the lab's experiment reports. No charting library: a console page and a report must
 * render offline, and a step line is a few path commands.
 */

/**
 * Bytes as YugabyteDB's (Kudu's) mem-trackers print them: three significant digits and one letter of
 * binary units — `880B`, `1.23K`, `33.0M`, `128M`, `1.50G`.
 */
export function humanBytes(bytes: number): string {
  const n = Math.round(bytes);
  if (Math.abs(n) < 1024) return `${n}B`;
  let v = n;
  let unit = '';
  for (const u of ['K', 'M', 'G', 'T', 'P']) {
    v /= 1024;
    unit = u;
    if (Math.abs(v) < 1024) break;
  }
  const a = Math.abs(v);
  return `${a < 10 ? v.toFixed(2) : a < 100 ? v.toFixed(1) : v.toFixed(0)}${unit}`;
}

export interface StepSeries {
  name: string;
  /** [x, y] points, x ascending: x in ms, y in bytes (or a count). */
  points: ReadonlyArray<readonly [number, number]>;
  colour?: string;
  /** Drawn dashed (e.g. SST bytes beside memtable bytes). */
  dashed?: boolean;
  /** Line width (default 1.8): replicas holding equal bytes draw on top of each other, so a wider line under a narrower one keeps both visible. */
  strokeWidth?: number;
}

/** Line widths per node index, widest first, so equal lines of several nodes show as nested bands. */
export function nodeStrokeWidth(index: number, nodes: number): number {
  return 1.5 + 1.5 * Math.max(0, nodes - 1 - index);
}

export interface ChartMarker {
  /** Where, in the x unit of the points (ms). */
  x: number;
  label: string;
}

export interface StepChartOptions {
  title?: string;
  width?: number;
  height?: number;
  /** What y counts: 'bytes' (ticks in human units) or any other word (plain numbers). */
  yUnit?: string;
  /** x of the chart's left edge (ms); defaults to the smallest x. */
  xStartMs?: number;
  /** x of the right edge (ms); defaults to the largest x. */
  xEndMs?: number;
  markers?: readonly ChartMarker[];
  /** Ticks on the x axis read "-30 s … 0 s" (time before xEndMs) instead of seconds since xStartMs. */
  xAgo?: boolean;
  /** The y axis reaches at least this high: charts meant to be compared side by side share one scale. */
  yMaxAtLeast?: number;
}

/** One colour per node (n0, n1, n2, ...) across every chart. */
export const NODE_COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];
/** Points per series drawn at most (evenly thinned beyond, so a long run still gives a small chart). */
export const STEP_POINTS_MAX = 2_000;

export function escapeXml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

function thinPoints(points: ReadonlyArray<readonly [number, number]>): Array<readonly [number, number]> {
  if (points.length <= STEP_POINTS_MAX) return [...points];
  const step = points.length / STEP_POINTS_MAX;
  const out: Array<readonly [number, number]> = [];
  for (let i = 0; i < STEP_POINTS_MAX; i++) out.push(points[Math.floor(i * step)]!);
  out.push(points[points.length - 1]!);
  return out;
}

/** A round step for about `n` ticks over `span` (1, 2 or 5 times a power of ten). */
export function niceStep(span: number, n: number): number {
  const raw = span / Math.max(1, n);
  if (!(raw > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

/** A round step in bytes: a power of two (256K, 1M, 32M, ...), so ticks land on whole binary units. */
function niceBytesStep(span: number, n: number): number {
  const raw = span / Math.max(1, n);
  if (!(raw > 1)) return 1;
  return 2 ** Math.ceil(Math.log2(raw));
}

/**
 * A step-line chart as a standalone SVG element: each series holds its value until the next sample
 * (a sampled gauge is not a slope), x axis in seconds, y in human units, optional vertical markers
 * (the commit, the end of a delay) and a legend.
 */
export function svgStepChart(series: readonly StepSeries[], o: StepChartOptions = {}): string {
  const W = o.width ?? 760;
  const H = o.height ?? 300;
  const m = { left: 62, right: 170, top: o.title ? 28 : 12, bottom: 36 };
  const pw = W - m.left - m.right;
  const ph = H - m.top - m.bottom;
  const all = series.flatMap((s) => s.points);
  const x0 = o.xStartMs ?? (all.length ? Math.min(...all.map((p) => p[0])) : 0);
  const x1 = Math.max(x0 + 1, o.xEndMs ?? (all.length ? Math.max(...all.map((p) => p[0])) : 1));
  const bytes = (o.yUnit ?? 'bytes') === 'bytes';
  const yTop = Math.max(1, o.yMaxAtLeast ?? 0, ...all.map((p) => p[1]));
  const yStep = bytes ? niceBytesStep(yTop, 4) : niceStep(yTop, 4);
  const yMax = Math.ceil(yTop / yStep) * yStep;
  const sx = (x: number): number => m.left + ((Math.min(x1, Math.max(x0, x)) - x0) / (x1 - x0)) * pw;
  const sy = (y: number): number => m.top + ph - (y / yMax) * ph;
  const f = (v: number): string => v.toFixed(1);
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="11">`);
  out.push(`<rect width="${W}" height="${H}" fill="#fff"/>`);
  if (o.title) out.push(`<text x="${m.left}" y="18" font-size="13" font-weight="bold">${escapeXml(o.title)}</text>`);
  for (let y = 0; y <= yMax + yStep / 2; y += yStep) {
    out.push(`<line x1="${m.left}" y1="${f(sy(y))}" x2="${m.left + pw}" y2="${f(sy(y))}" stroke="#eee"/>`);
    out.push(`<text x="${m.left - 6}" y="${f(sy(y) + 4)}" text-anchor="end">${escapeXml(bytes ? humanBytes(y) : String(y))}</text>`);
  }
  const xStepS = niceStep((x1 - x0) / 1000, 8);
  for (let s = 0; s * 1000 <= x1 - x0 + 1; s += xStepS) {
    const x = o.xAgo ? x1 - s * 1000 : x0 + s * 1000;
    const label = o.xAgo ? `${s === 0 ? '' : '-'}${+s.toFixed(3)} s` : `${+s.toFixed(3)} s`;
    out.push(`<line x1="${f(sx(x))}" y1="${m.top + ph}" x2="${f(sx(x))}" y2="${m.top + ph + 4}" stroke="#333"/>`);
    out.push(`<text x="${f(sx(x))}" y="${m.top + ph + 16}" text-anchor="middle">${label}</text>`);
  }
  out.push(`<line x1="${m.left}" y1="${m.top + ph}" x2="${m.left + pw}" y2="${m.top + ph}" stroke="#333"/>`);
  out.push(`<line x1="${m.left}" y1="${m.top}" x2="${m.left}" y2="${m.top + ph}" stroke="#333"/>`);
  out.push(`<text x="${m.left + pw / 2}" y="${H - 4}" text-anchor="middle">${o.xAgo ? 'seconds ago' : 'seconds'}</text>`);
  (o.markers ?? []).forEach((mk, i) => {
    const x = f(sx(mk.x));
    out.push(`<line x1="${x}" y1="${m.top}" x2="${x}" y2="${m.top + ph}" stroke="#555" stroke-dasharray="4 3"/>`);
    // A label in the right half reads leftwards, clear of the legend.
    const right = sx(mk.x) > m.left + pw / 2;
    out.push(`<text x="${x}" y="${m.top + 10 + 12 * i}" dx="${right ? -3 : 3}" text-anchor="${right ? 'end' : 'start'}" fill="#333">${escapeXml(mk.label)}</text>`);
  });
  series.forEach((s, i) => {
    const colour = s.colour ?? NODE_COLOURS[i % NODE_COLOURS.length]!;
    const pts = thinPoints(s.points);
    if (pts.length > 0) {
      let d = `M${f(sx(pts[0]![0]))},${f(sy(pts[0]![1]))}`;
      for (let k = 1; k < pts.length; k++) d += `H${f(sx(pts[k]![0]))}V${f(sy(pts[k]![1]))}`;
      out.push(`<path fill="none" stroke="${colour}" stroke-width="${s.strokeWidth ?? 1.8}"${s.dashed ? ' stroke-dasharray="5 3"' : ''} d="${d}"><title>${escapeXml(s.name)}</title></path>`);
    }
    const ly = m.top + 8 + i * 16;
    out.push(`<line x1="${m.left + pw + 12}" y1="${ly}" x2="${m.left + pw + 32}" y2="${ly}" stroke="${colour}" stroke-width="2"${s.dashed ? ' stroke-dasharray="5 3"' : ''}/>`);
    out.push(`<text x="${m.left + pw + 36}" y="${ly + 4}">${escapeXml(s.name)}</text>`);
  });
  out.push('</svg>');
  return out.join('\n');
}
