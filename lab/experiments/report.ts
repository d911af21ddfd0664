/**
 * Experiment reports: Markdown with the checks, figures and timeline, plus a small hand-written SVG
 * line chart (no charting library: a lab report must open anywhere, offline).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type ChartSeries, type ExperimentResult, passed } from './experiment';
import { makeDirs } from '../../common/fs-dirs';

export type { ChartSeries } from './experiment';

export interface ChartOptions {
  title?: string;
  width?: number;
  height?: number;
  xLabel?: string;
  yLabel?: string;
}

/** Series beyond this many get no colour of their own (they reuse the palette). */
const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];
/** Points per series drawn at most (evenly thinned beyond, so a long run still gives a small file). */
export const CHART_POINTS_MAX = 2_000;

function esc(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}

function thin(points: ReadonlyArray<[number, number]>): Array<[number, number]> {
  if (points.length <= CHART_POINTS_MAX) return [...points];
  const step = points.length / CHART_POINTS_MAX;
  const out: Array<[number, number]> = [];
  for (let i = 0; i < CHART_POINTS_MAX; i++) out.push(points[Math.floor(i * step)]!);
  out.push(points[points.length - 1]!);
  return out;
}

function fmt(v: number): string {
  if (Math.abs(v) >= 1 << 20) return `${(v / (1 << 20)).toFixed(1)}Mi`;
  if (Math.abs(v) >= 1024) return `${(v / 1024).toFixed(1)}Ki`;
  return String(Math.round(v * 100) / 100);
}

/** A line chart as a standalone SVG document: axes with min/max ticks, one polyline per series, a legend. */
export function svgLineChart(series: readonly ChartSeries[], opts: ChartOptions = {}): string {
  const W = opts.width ?? 720;
  const H = opts.height ?? 320;
  const m = { left: 70, right: 150, top: 30, bottom: 40 };
  const pw = W - m.left - m.right;
  const ph = H - m.top - m.bottom;
  const all = series.flatMap((s) => s.points);
  const xs = all.map((p) => p[0]);
  const ys = all.map((p) => p[1]);
  const xMin = xs.length ? Math.min(...xs) : 0;
  const xMax = xs.length ? Math.max(...xs) : 1;
  const yMin = 0;
  const yMax = ys.length ? Math.max(1, ...ys) : 1;
  const sx = (x: number): number => m.left + (xMax === xMin ? 0 : ((x - xMin) / (xMax - xMin)) * pw);
  const sy = (y: number): number => m.top + ph - ((y - yMin) / (yMax - yMin)) * ph;
  const parts: string[] = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="11">`);
  parts.push(`<rect width="${W}" height="${H}" fill="#fff"/>`);
  if (opts.title) parts.push(`<text x="${m.left}" y="18" font-size="13" font-weight="bold">${esc(opts.title)}</text>`);
  parts.push(`<line x1="${m.left}" y1="${m.top + ph}" x2="${m.left + pw}" y2="${m.top + ph}" stroke="#333"/>`);
  parts.push(`<line x1="${m.left}" y1="${m.top}" x2="${m.left}" y2="${m.top + ph}" stroke="#333"/>`);
  for (const [v, y] of [[yMin, sy(yMin)], [yMax, sy(yMax)], [(yMin + yMax) / 2, sy((yMin + yMax) / 2)]] as const) {
    parts.push(`<text x="${m.left - 6}" y="${y + 4}" text-anchor="end">${esc(fmt(v))}</text>`);
    parts.push(`<line x1="${m.left}" y1="${y}" x2="${m.left + pw}" y2="${y}" stroke="#eee"/>`);
  }
  parts.push(`<text x="${m.left}" y="${m.top + ph + 16}" text-anchor="middle">${esc(fmt(xMin))}</text>`);
  parts.push(`<text x="${m.left + pw}" y="${m.top + ph + 16}" text-anchor="middle">${esc(fmt(xMax))}</text>`);
  if (opts.xLabel) parts.push(`<text x="${m.left + pw / 2}" y="${H - 8}" text-anchor="middle">${esc(opts.xLabel)}</text>`);
  if (opts.yLabel) parts.push(`<text x="14" y="${m.top + ph / 2}" text-anchor="middle" transform="rotate(-90 14 ${m.top + ph / 2})">${esc(opts.yLabel)}</text>`);
  series.forEach((s, i) => {
    const colour = PALETTE[i % PALETTE.length]!;
    const pts = thin(s.points).map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(' ');
    if (pts) parts.push(`<polyline fill="none" stroke="${colour}" stroke-width="1.5" points="${pts}"/>`);
    const ly = m.top + 10 + i * 16;
    parts.push(`<line x1="${m.left + pw + 12}" y1="${ly}" x2="${m.left + pw + 32}" y2="${ly}" stroke="${colour}" stroke-width="2"/>`);
    parts.push(`<text x="${m.left + pw + 36}" y="${ly + 4}">${esc(s.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}

export function renderMarkdown(r: ExperimentResult, chartFile?: string): string {
  const lines: string[] = [];
  lines.push(`# ${r.title}`, '', `Experiment \`${r.name}\` — ${passed(r) ? '**PASSED**' : '**FAILED**'} (${new Date().toISOString()})`, '', r.summary, '');
  lines.push('## Checks', '', '| check | result | detail |', '|---|---|---|');
  for (const c of r.checks) lines.push(`| ${c.name} | ${c.ok ? 'held' : '**FAILED**'} | ${c.detail.replace(/\|/g, '\\|')} |`);
  lines.push('', '## Figures', '', '| figure | value |', '|---|---|');
  for (const [k, v] of Object.entries(r.figures)) lines.push(`| ${k} | ${String(v)} |`);
  if (chartFile && r.chart) lines.push('', `## ${r.chart.title}`, '', `![${r.chart.title}](${chartFile})`);
  lines.push('', '## Timeline', '', '```', ...r.timeline, '```', '');
  return lines.join('\n');
}

/** Writes BASE/experiments/<name>-<stamp>.md (and .svg with the chart); returns the Markdown path. */
export function writeReport(baseDir: string, r: ExperimentResult): string {
  const dir = path.join(baseDir, 'experiments');
  makeDirs(dir, 'report directory');
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const stem = `${r.name}-${stamp}`;
  let chartFile: string | undefined;
  if (r.chart) {
    chartFile = `${stem}.svg`;
    fs.writeFileSync(path.join(dir, chartFile), svgLineChart(r.chart.series, { title: r.chart.title, xLabel: 'ms since start', yLabel: r.chart.yLabel }));
  }
  const file = path.join(dir, `${stem}.md`);
  fs.writeFileSync(file, renderMarkdown(r, chartFile));
  return file;
}

/** The result as text for a terminal. */
export function renderText(r: ExperimentResult): string {
  const lines = [`${r.title}: ${passed(r) ? 'PASSED' : 'FAILED'}`];
  for (const c of r.checks) lines.push(`  [${c.ok ? 'ok' : 'FAIL'}] ${c.name}: ${c.detail}`);
  for (const [k, v] of Object.entries(r.figures)) lines.push(`  ${k} = ${String(v)}`);
  if (r.reportPath) lines.push(`  report: ${r.reportPath}`);
  return lines.join('\n');
}
