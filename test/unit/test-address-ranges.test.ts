/**
 * Test files run in parallel (vitest.config.mts), so no two integration test files may use the same
 * loopback addresses (and the Docker tests, on 127.0.0.1, publish their ports at distinct offsets). This test reads each file's host bases — ProcCluster's `hostBase`,
 * the lab's `--host_base` / `HOST_BASE`, `startTxnCluster(N)`, the bench's `start(n, N)` and
 * `--host-base-a/b`, and the bench sections' own default bases where a file runs them — and fails
 * naming two files whose ranges 127.0.0.(base … base+nodes−1) overlap.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(__dirname, '../..');
const DIR = 'test/integration';

/**
 * Bench sections that start clusters at their own fixed bases (bench/vs-etcd.ts, load-bench.ts,
 * big-txn.ts). `--vs etcd`'s etcd members (127.0.0.60-62) are left out: they listen only on etcd's
 * ports 26379/26380, which no tessera server uses.
 */
const BENCH_DEFAULTS: Array<{ marker: RegExp; ranges: Array<[number, number]> }> = [
  { marker: /'--vs', 'etcd'/, ranges: [[70, 72]] },
  { marker: /'bench', 'load'/, ranges: [[77, 79]] },
  { marker: /'bench', 'big-txn'/, ranges: [[74, 76]] },
];

export interface Range {
  file: string;
  from: number;
  to: number;
}

/** The loopback ranges one test file's source claims. */
export function rangesOf(file: string, src: string): Range[] {
  // Nodes per cluster: the largest count the file names (a node holds a master, a tserver or both), else 3.
  const counts = [...src.matchAll(/(?:tservers|masters|nodes):\s*(\d+)|'--nodes',\s*'(\d+)'/g)].map((m) => Number(m[1] ?? m[2]));
  const width = counts.length > 0 ? Math.max(...counts) : 3;
  const out: Range[] = [];
  for (const m of src.matchAll(/hostBase:\s*(\d+)|HOST_BASE\s*=\s*(\d+)|'--host_base',\s*'(\d+)'|startTxnCluster\((\d+)\)|'--host-base-[ab]',\s*'(\d+)'/g)) {
    const base = Number(m.slice(1).find((g) => g !== undefined));
    out.push({ file, from: base, to: base + (m[4] !== undefined || m[5] !== undefined ? 3 : width) - 1 });
  }
  // BenchCluster.start(tservers, hostBase): master and tserver 0 share the first address.
  for (const m of src.matchAll(/\.start\((\d+),\s*(\d+)/g)) out.push({ file, from: Number(m[2]), to: Number(m[2]) + Number(m[1]) - 1 });
  for (const d of BENCH_DEFAULTS) if (d.marker.test(src)) out.push(...d.ranges.map(([from, to]) => ({ file, from, to })));
  return out;
}

/** Pairs of ranges of different files that share an address. */
export function overlaps(ranges: readonly Range[]): string[] {
  const bad: string[] = [];
  for (let i = 0; i < ranges.length; i++) {
    for (let j = i + 1; j < ranges.length; j++) {
      const a = ranges[i]!;
      const b = ranges[j]!;
      if (a.file !== b.file && a.from <= b.to && b.from <= a.to) bad.push(`${a.file} (127.0.0.${a.from}-${a.to}) and ${b.file} (127.0.0.${b.from}-${b.to})`);
    }
  }
  return bad;
}

function allRanges(): Range[] {
  return fs
    .readdirSync(path.join(ROOT, DIR))
    .filter((f) => f.endsWith('.test.ts'))
    .flatMap((f) => rangesOf(`${DIR}/${f}`, fs.readFileSync(path.join(ROOT, DIR, f), 'utf8')));
}

describe('test address ranges', () => {
  it('test files: no two integration test files share a loopback address (they run in parallel)', () => {
    const ranges = allRanges();
    expect(ranges.length).toBeGreaterThan(20); // the patterns still find the files' bases
    expect(overlaps(ranges)).toEqual([]);
  });

  it('test files: the Docker test files publish their ports at offsets far enough apart', () => {
    // Docker labs publish every node's ports on 127.0.0.1 at standard + PORT_OFFSET + i.
    const dir = path.join(ROOT, 'test/docker');
    const offsets = fs
      .readdirSync(dir)
      .filter((f) => f.endsWith('.test.ts'))
      .flatMap((f) => [...fs.readFileSync(path.join(dir, f), 'utf8').matchAll(/const PORT_OFFSET = ([\d_]+);/g)].map((m) => Number(m[1]!.replace(/_/g, ''))))
      .sort((a, b) => a - b);
    expect(offsets.length).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < offsets.length; i++) expect(offsets[i]! - offsets[i - 1]!, `offsets ${offsets.join(', ')}`).toBeGreaterThanOrEqual(100);
  });

  it('test files: an overlap is caught, across the ways a file names its base', () => {
    const r = [
      ...rangesOf('a.test.ts', "ProcCluster.create({ hostBase: 40, masters: 1, tservers: 4 })"),
      ...rangesOf('b.test.ts', 'const { cluster } = await startTxnCluster(43);'),
      ...rangesOf('c.test.ts', "runCli(['lab', 'up', '--host_base', '50', '--nodes', '3'])"),
      ...rangesOf('f.test.ts', "await c.start(1, 46, ['--x=1']);"),
      ...rangesOf('d.test.ts', "runCli(['bench', '--vs', 'etcd'])"),
      ...rangesOf('e.test.ts', 'const HOST_BASE = 71;'),
    ];
    expect(overlaps(r)).toEqual([
      'a.test.ts (127.0.0.40-43) and b.test.ts (127.0.0.43-45)',
      'd.test.ts (127.0.0.70-72) and e.test.ts (127.0.0.71-73)',
    ]);
  });
});
