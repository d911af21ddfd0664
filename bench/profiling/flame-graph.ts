/**
 * Flame graphs of a V8 CPU profile (`node --cpu-prof`, a `.cpuprofile` file): the call tree with each
 * frame as wide as the time spent in it and in what it called, stacks growing upwards. Two outputs:
 *
 * - a self-contained HTML page (no network needed to open it) drawn by the d3-flame-graph library:
 *   click a frame to zoom into it, search by name (regular expression), hover for the time;
 * - the "folded stacks" text (`frame;frame;frame microseconds` per line, Brendan Gregg's format) that
 *   flamegraph.pl, inferno and speedscope read.
 *
 * Time attribution is the summary's (cpu-profile-summary.ts, DevTools' rule). The idle time of the
 * thread (V8's `(idle)` frame) is left out: the graph shows where the busy time went, and its title
 * says how busy the thread was. Frames with the same label under the same parent are merged (V8 keeps
 * one node per call site; a flame graph per function reads better).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CpuProfile, ProfileNode } from './cpu-profile-summary';
import { frameLabel, isIdle, selfTimesUs } from './cpu-profile-summary';

/** One frame of the flame graph: `value` is its self time in µs (d3-flame-graph's selfValue mode). */
export interface FlameNode {
  name: string;
  value: number;
  children: FlameNode[];
}

export interface FlameTree {
  root: FlameNode;
  /** Busy time of the thread (µs): the root's total. */
  busyUs: number;
  /** Idle time left out (µs). */
  idleUs: number;
  /** Wall time the profile covers (µs). */
  wallUs: number;
}

/** The frames a folded-stacks line separates with ';' must not contain one. */
function foldedName(name: string): string {
  return name.replace(/;/g, ':').replace(/[\r\n]/g, ' ');
}

interface Building {
  node: FlameNode;
  byName: Map<string, Building>;
}

/** The merged call tree of a profile, busy time only. */
export function flameTreeOf(p: CpuProfile): FlameTree {
  const selfUs = selfTimesUs(p);
  const byId = new Map<number, ProfileNode>();
  const isChild = new Set<number>();
  for (const n of p.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) isChild.add(c);
  }
  const root: Building = { node: { name: 'all', value: 0, children: [] }, byName: new Map() };
  let idleUs = 0;
  // Depth-first without recursion: V8 stacks can be deeper than the JavaScript stack allows.
  const stack: Array<{ id: number; parent: Building }> = [];
  for (const n of p.nodes) {
    if (isChild.has(n.id)) continue;
    // V8's single root is "(root)"; its time (rare) is the graph root's own.
    root.node.value += selfUs.get(n.id) ?? 0;
    for (const c of n.children ?? []) stack.push({ id: c, parent: root });
  }
  const seen = new Set<number>();
  while (stack.length > 0) {
    const { id, parent } = stack.pop()!;
    const n = byId.get(id);
    if (!n || seen.has(id)) continue;
    seen.add(id);
    const own = selfUs.get(id) ?? 0;
    if (isIdle(n.callFrame)) {
      idleUs += own;
      continue;
    }
    const name = frameLabel(n.callFrame);
    let b = parent.byName.get(name);
    if (!b) {
      b = { node: { name, value: 0, children: [] }, byName: new Map() };
      parent.byName.set(name, b);
      parent.node.children.push(b.node);
    }
    b.node.value += own;
    for (const c of n.children ?? []) stack.push({ id: c, parent: b });
  }
  const busyUs = prune(root.node);
  return { root: root.node, busyUs, idleUs, wallUs: Math.max(0, p.endTime - p.startTime) };
}

/** Drop subtrees without time; children widest first. Returns the node's total (µs). */
function prune(top: FlameNode): number {
  const totals = new Map<FlameNode, number>();
  const order: FlameNode[] = [];
  const stack = [top];
  while (stack.length > 0) {
    const n = stack.pop()!;
    order.push(n);
    for (const c of n.children) stack.push(c);
  }
  for (let i = order.length - 1; i >= 0; i--) {
    const n = order[i]!;
    n.children = n.children.filter((c) => (totals.get(c) ?? 0) > 0);
    n.children.sort((a, b) => (totals.get(b) ?? 0) - (totals.get(a) ?? 0));
    let sum = n.value;
    for (const c of n.children) sum += totals.get(c) ?? 0;
    totals.set(n, sum);
  }
  return totals.get(top) ?? 0;
}

/**
 * The same time with every stack reversed: the root's children are the frames the thread was *in*
 * (each as wide as its self time, over all its callers), and above each are its callers, then theirs.
 * In a flat profile this is the readable view: where `writev` or a RocksDB write was called from,
 * summed over every path that reaches it.
 */
export function reversedTreeOf(t: FlameTree): FlameNode {
  const root: Building = { node: { name: t.root.name, value: t.root.value, children: [] }, byName: new Map() };
  const stack: Array<{ n: FlameNode; path: string[] }> = t.root.children.map((n) => ({ n, path: [n.name] }));
  while (stack.length > 0) {
    const { n, path: at } = stack.pop()!;
    if (n.value > 0) {
      let b = root;
      for (let i = at.length - 1; i >= 0; i--) {
        const name = at[i]!;
        let next = b.byName.get(name);
        if (!next) {
          next = { node: { name, value: 0, children: [] }, byName: new Map() };
          b.byName.set(name, next);
          b.node.children.push(next.node);
        }
        b = next;
      }
      b.node.value += n.value;
    }
    for (const c of n.children) stack.push({ n: c, path: [...at, c.name] });
  }
  prune(root.node);
  return root.node;
}

/** Folded stacks: one line per frame with self time, `all;a;b;c µs` (the root included). */
export function foldedStacks(t: FlameTree): string {
  const lines: string[] = [];
  const stack: Array<{ n: FlameNode; path: string }> = [{ n: t.root, path: foldedName(t.root.name) }];
  while (stack.length > 0) {
    const { n, path: at } = stack.pop()!;
    const us = Math.round(n.value);
    if (us > 0) lines.push(`${at} ${us}`);
    for (let i = n.children.length - 1; i >= 0; i--) {
      const c = n.children[i]!;
      stack.push({ n: c, path: `${at};${foldedName(c.name)}` });
    }
  }
  return lines.join('\n') + (lines.length > 0 ? '\n' : '');
}

/**
 * The browser builds of d3-flame-graph and the d3 modules it needs, in load order: each UMD file adds
 * itself to the global `d3` (the flame graph to `flamegraph`).
 */
const SCRIPTS: ReadonlyArray<{ pkg: string; file: string }> = [
  { pkg: 'internmap', file: 'dist/internmap.min.js' },
  { pkg: 'd3-array', file: 'dist/d3-array.min.js' },
  { pkg: 'd3-color', file: 'dist/d3-color.min.js' },
  { pkg: 'd3-interpolate', file: 'dist/d3-interpolate.min.js' },
  { pkg: 'd3-format', file: 'dist/d3-format.min.js' },
  { pkg: 'd3-time', file: 'dist/d3-time.min.js' },
  { pkg: 'd3-time-format', file: 'dist/d3-time-format.min.js' },
  { pkg: 'd3-scale', file: 'dist/d3-scale.min.js' },
  { pkg: 'd3-selection', file: 'dist/d3-selection.min.js' },
  { pkg: 'd3-dispatch', file: 'dist/d3-dispatch.min.js' },
  { pkg: 'd3-timer', file: 'dist/d3-timer.min.js' },
  { pkg: 'd3-ease', file: 'dist/d3-ease.min.js' },
  { pkg: 'd3-transition', file: 'dist/d3-transition.min.js' },
  { pkg: 'd3-hierarchy', file: 'dist/d3-hierarchy.min.js' },
  { pkg: 'd3-flame-graph', file: 'dist/d3-flamegraph.umd.min.js' },
];

/** A package's folder, found the way `require` finds the package (its exports hide package.json). */
function packageDir(pkg: string): string {
  const entry = require.resolve(pkg);
  const marker = `${path.sep}node_modules${path.sep}${pkg}${path.sep}`;
  const at = entry.lastIndexOf(marker);
  if (at < 0) throw new Error(`flame graph: cannot locate package ${pkg} (resolved to ${entry})`);
  return entry.slice(0, at + marker.length);
}

let scriptsCache: string | undefined;
function inlineScripts(): string {
  scriptsCache ??= SCRIPTS.map(({ pkg, file }) => {
    const text = fs.readFileSync(path.join(packageDir(pkg), file), 'utf8');
    return `<script>/* ${pkg} */\n${text.replace(/<\/script/gi, '<\\/script')}\n</script>`;
  }).join('\n');
  return scriptsCache;
}

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

/** JSON that is safe inside a <script> element. */
function scriptJson(v: unknown): string {
  return JSON.stringify(v).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
}

/** The self-contained HTML page of a flame graph. */
export function renderFlameGraphHtml(t: FlameTree, title: string): string {
  const busyShare = t.wallUs > 0 ? t.busyUs / t.wallUs : 0;
  const subtitle = `${(t.wallUs / 1e6).toFixed(1)} s of the thread, busy ${(t.busyUs / 1000).toFixed(0)} ms (${(100 * busyShare).toFixed(1)} %); idle time is left out. The whole thread at the top, callees below it; width = time in the frame and what it called (reversed: the frames the thread was in at the top, each as wide as its own time, its callers below). Click a frame to zoom, click the top frame to zoom out; the search takes a regular expression.`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(title)}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 16px; color: #222; }
h1 { font-size: 18px; margin: 0 0 4px; }
p.sub { margin: 0 0 10px; color: #555; font-size: 13px; }
#bar { margin-bottom: 8px; font-size: 13px; }
#q { width: 320px; }
#details { font-size: 13px; color: #444; min-height: 18px; }
.d3-flame-graph-tip { background: #fff; border: 1px solid #999; padding: 4px 6px; font-size: 12px; max-width: 640px; }
</style>
</head>
<body>
<h1>${escapeHtml(title)}</h1>
<p class="sub">${escapeHtml(subtitle)}</p>
<div id="bar"><input id="q" placeholder="search frames (regular expression)"> <button id="reset">reset zoom</button> <label><input type="checkbox" id="rev"> reversed: the frames the thread was in first, their callers below</label></div>
<div id="details"></div>
<div id="chart"></div>
${inlineScripts()}
<script>
const data = ${scriptJson(t.root)};
const reversed = ${scriptJson(reversedTreeOf(t))};
const total = ${Math.max(1, Math.round(t.busyUs))};
const fmt = (us) => (us / 1000).toFixed(1) + ' ms (' + (100 * us / total).toFixed(2) + ' % of busy)';
const tip = flamegraph.tooltip.defaultFlamegraphTooltip().text((d) => d.data.name + ': ' + fmt(d.value) + ', self ' + fmt(d.data.value));
const chart = flamegraph.default()
  .width(Math.max(960, window.innerWidth - 40))
  .cellHeight(18)
  .selfValue(true)
  .sort(true)
  .inverted(true)
  .minFrameSize(1)
  .transitionDuration(300)
  .tooltip(tip)
  .label((d) => d.data.name + ': ' + fmt(d.value))
  .setDetailsElement(document.getElementById('details'))
  .setSearchHandler((results, sum) => {
    document.getElementById('details').textContent = results.length ? 'search: ' + results.length + ' frame(s), ' + fmt(sum) : '';
  })
  .setSearchMatch((d, term) => { try { return new RegExp(term).test(d.data.name); } catch (e) { return d.data.name.includes(term); } });
d3.select('#chart').datum(data).call(chart);
document.getElementById('q').addEventListener('input', (e) => { const v = e.target.value; if (v) chart.search(v); else chart.clear(); });
document.getElementById('reset').addEventListener('click', () => chart.resetZoom());
document.getElementById('rev').addEventListener('change', (e) => { chart.update(e.target.checked ? reversed : data); const v = document.getElementById('q').value; if (v) chart.search(v); });
</script>
</body>
</html>
`;
}

/**
 * Write `<base>.flame.html` and `<base>.folded` for a profile file (base: the profile's path without
 * `.cpuprofile`, or `out` without `.html`). Returns the paths written.
 */
export function writeFlameGraphs(profile: CpuProfile, profileFile: string, title: string, out?: string): { htmlPath: string; foldedPath: string; tree: FlameTree } {
  const tree = flameTreeOf(profile);
  const base = out ? out.replace(/\.html?$/i, '') : profileFile.replace(/\.cpuprofile$/i, '');
  const htmlPath = out && /\.html?$/i.test(out) ? out : `${base}.flame.html`;
  const foldedPath = `${base}.folded`;
  fs.writeFileSync(htmlPath, renderFlameGraphHtml(tree, title));
  fs.writeFileSync(foldedPath, foldedStacks(tree));
  return { htmlPath, foldedPath, tree };
}
