/**
 * Flame graphs of a CPU profile (bench/profiling/flame-graph.ts): a hand-built .cpuprofile with known sample
 * times, so the merged call tree, the folded stacks and the data the HTML page embeds have exact
 * expected values; the page carries the chart library inline and escapes what could end its script.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CpuProfile } from '../../bench/profiling/cpu-profile-summary';
import { flameTreeOf, foldedStacks, renderFlameGraphHtml, reversedTreeOf, writeFlameGraphs, type FlameNode } from '../../bench/profiling/flame-graph';
import { parseProfileArgs } from '../../bench/profiling/profile-section';

const URL = 'file:///repo/tessera/dist/raft/x.js';
const frame = (functionName: string, url: string, lineNumber = 0, columnNumber = 0) => ({ functionName, url, lineNumber, scriptId: '0', columnNumber });

/**
 * root ─┬─ f (call site 1) ── g                 g 2 ms
 *       ├─ f (call site 2) ─┬─ g                g 1 ms, f self 1 ms
 *       │                   └─ h;x             4 ms
 *       ├─ (idle)                               2 ms
 *       └─ (garbage collector)                  1 ms
 */
function profile(hName = 'h;x'): CpuProfile {
  const nodes = [
    { id: 1, callFrame: frame('(root)', '', -1), children: [2, 3, 4, 5] },
    { id: 2, callFrame: frame('f', URL, 0, 4), children: [6] },
    { id: 3, callFrame: frame('f', URL, 0, 9), children: [7, 8] },
    { id: 4, callFrame: frame('(idle)', '', -1) },
    { id: 5, callFrame: frame('(garbage collector)', '', -1) },
    { id: 6, callFrame: frame('g', URL, 1) },
    { id: 7, callFrame: frame('g', URL, 1) },
    { id: 8, callFrame: frame(hName, URL, 2) },
  ];
  // Sample i lasts timeDeltas[i + 1] µs (1 ms each); the last one until endTime (1 ms).
  const samples = [6, 6, 7, 3, 8, 8, 8, 8, 4, 4, 5];
  const timeDeltas: number[] = samples.map((_, i) => (i === 0 ? 0 : 1000));
  const startTime = 5_000_000;
  const lastStamp = startTime + timeDeltas.reduce((a, b) => a + b, 0);
  return { nodes, samples, timeDeltas, startTime, endTime: lastStamp + 1000 };
}

const total = (n: FlameNode): number => n.value + n.children.reduce((s, c) => s + total(c), 0);

describe('bench flame graph', () => {
  it('merges call sites of the same function, leaves idle time out and puts the widest child first', () => {
    const t = flameTreeOf(profile());
    expect(t.wallUs).toBe(11_000);
    expect(t.idleUs).toBe(2000);
    expect(t.busyUs).toBe(9000);
    expect(total(t.root)).toBe(9000);
    expect(t.root.name).toBe('all');
    expect(t.root.children.map((c) => [c.name, total(c)])).toEqual([
      ['f raft/x.js:1', 8000],
      ['(garbage collector)', 1000],
    ]);
    const f = t.root.children[0]!;
    expect(f.value).toBe(1000);
    expect(f.children.map((c) => [c.name, c.value, c.children.length])).toEqual([
      ['h;x raft/x.js:3', 4000, 0],
      ['g raft/x.js:2', 3000, 0],
    ]);
  });

  it('writes folded stacks whose lines add up to the busy time, with no stray separators', () => {
    const t = flameTreeOf(profile());
    const text = foldedStacks(t);
    expect(text).toBe(['all;f raft/x.js:1 1000', 'all;f raft/x.js:1;h:x raft/x.js:3 4000', 'all;f raft/x.js:1;g raft/x.js:2 3000', 'all;(garbage collector) 1000', ''].join('\n'));
    const sum = text
      .trim()
      .split('\n')
      .reduce((s, l) => s + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    expect(sum).toBe(t.busyUs);
  });

  it('reverses the stacks: the frames the thread was in at the bottom, each as wide as its self time, its callers above', () => {
    const t = flameTreeOf(profile());
    const r = reversedTreeOf(t);
    expect(total(r)).toBe(t.busyUs);
    const shape = (n: FlameNode): unknown => [n.name, total(n), n.children.map(shape)];
    expect(r.children.map(shape)).toEqual([
      ['h;x raft/x.js:3', 4000, [['f raft/x.js:1', 4000, []]]],
      ['g raft/x.js:2', 3000, [['f raft/x.js:1', 3000, []]]],
      ['(garbage collector)', 1000, []],
      ['f raft/x.js:1', 1000, []],
    ]);
  });

  it('renders a page with the chart library inline, the tree as data, and nothing that ends its script early', () => {
    const t = flameTreeOf(profile('</script><img src=x onerror=alert(1)>'));
    const html = renderFlameGraphHtml(t, 'title <with> markup');
    // The libraries come from node_modules, inline: the page opens without a network.
    for (const pkg of ['d3-selection', 'd3-hierarchy', 'd3-flame-graph']) expect(html).toContain(`<script>/* ${pkg} */`);
    expect(html).not.toMatch(/<script[^>]+src=/);
    expect(html).toContain('flamegraph.default()');
    expect(html).toContain('<title>title &lt;with&gt; markup</title>');
    expect(html).not.toContain('</script><img');
    const m = /const data = (.*);\n/.exec(html);
    expect(m).not.toBeNull();
    const data = JSON.parse(m![1]!) as FlameNode;
    expect(data).toEqual(t.root);
    const rev = /const reversed = (.*);\n/.exec(html);
    expect(JSON.parse(rev![1]!)).toEqual(reversedTreeOf(t));
    expect(data.children[0]!.children[0]!.name).toBe('</script><img src=x onerror=alert(1)> raft/x.js:3');
  });

  it('writes the page and the folded stacks beside the profile, or where asked', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-flame-'));
    try {
      const file = path.join(dir, 'CPU.1.cpuprofile');
      const a = writeFlameGraphs(profile(), file, 'beside');
      expect(a.htmlPath).toBe(path.join(dir, 'CPU.1.flame.html'));
      expect(a.foldedPath).toBe(path.join(dir, 'CPU.1.folded'));
      expect(fs.readFileSync(a.foldedPath, 'utf8')).toBe(foldedStacks(a.tree));
      expect(fs.readFileSync(a.htmlPath, 'utf8')).toContain('<h1>beside</h1>');
      const b = writeFlameGraphs(profile(), file, 'asked', path.join(dir, 'out.html'));
      expect(b.htmlPath).toBe(path.join(dir, 'out.html'));
      expect(b.foldedPath).toBe(path.join(dir, 'out.folded'));
      expect(fs.existsSync(b.htmlPath) && fs.existsSync(b.foldedPath)).toBe(true);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('bench profile: finds the profile and the page among the options, in any order, and refuses what it cannot write', () => {
    expect(parseProfileArgs(['p.cpuprofile'])).toEqual({ file: 'p.cpuprofile', top: 15 });
    expect(parseProfileArgs(['--flamegraph', 'p.cpuprofile'])).toEqual({ file: 'p.cpuprofile', top: 15, flamegraph: '' });
    expect(parseProfileArgs(['p.cpuprofile', '--flamegraph', 'out.html', '--top', '3'])).toEqual({ file: 'p.cpuprofile', top: 3, flamegraph: 'out.html' });
    expect(parseProfileArgs(['--top', '4', '--flamegraph=fg.htm', 'p.cpuprofile'])).toEqual({ file: 'p.cpuprofile', top: 4, flamegraph: 'fg.htm' });
    expect(() => parseProfileArgs(['p.cpuprofile', '--flamegraph=out.svg'])).toThrow(/--flamegraph writes an \.html page, got 'out\.svg'/);
    expect(() => parseProfileArgs(['--flamegraph', 'out.html'])).toThrow(/usage: npm run bench profile/);
    expect(() => parseProfileArgs(['p.cpuprofile', '--flame'])).toThrow(/unknown option '--flame'/);
  });
});
