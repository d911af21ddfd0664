/**
 * The figures intents-apply reads, as the blog reads them on the consoles: per tablet and node, the
 * IntentsDB and RegularDB memtable bytes. Pure functions over snapshots and samples (the experiment
 * does the I/O), so each rule is testable on its own.
 */
import { randomBytes } from 'node:crypto';
import { humanBytes, NODE_COLOURS, nodeStrokeWidth, type StepSeries } from '../../rpc';
import type { ReplicaRow } from '../tablet-view';

/** node -> tabletId -> that replica's row of /api/v1/tablets. */
export type Snapshot = Map<string, Map<string, ReplicaRow>>;

export interface Sample {
  atMs: number;
  snap: Snapshot;
}

/** The 95 printable ASCII characters: the alphabet of Oracle's (orafce's) dbms_random.string('P', n). */
const PRINTABLE_FIRST = 0x20;
const PRINTABLE_COUNT = 95;

/**
 * `bytes` characters of random printable text starting with `<i>:` (so a row names itself). Random,
 * so it does not compress: the memtables hold as many bytes as the blog's rows (RocksDB compresses
 * only SST blocks, but a value of one repeated letter would also hide a flush's true size).
 */
export function randomRowValue(i: number, bytes: number): string {
  const head = `${i}:`;
  const n = Math.max(0, bytes - head.length);
  const raw = randomBytes(n);
  const out = Buffer.allocUnsafe(n);
  for (let k = 0; k < n; k++) out[k] = PRINTABLE_FIRST + (raw[k]! % PRINTABLE_COUNT);
  return head + out.toString('latin1');
}

export function tabletIds(s: Snapshot): string[] {
  const ids = new Set<string>();
  for (const m of s.values()) for (const id of m.keys()) ids.add(id);
  return [...ids].sort();
}

export const intentsMem = (s: Snapshot, node: string, id: string): number => s.get(node)?.get(id)?.intentsdb.memtableBytes ?? 0;
export const regularMem = (s: Snapshot, node: string, id: string): number => s.get(node)?.get(id)?.regulardb.memtableBytes ?? 0;
const sum = (s: Snapshot, node: string, f: (s: Snapshot, node: string, id: string) => number): number => tabletIds(s).reduce((a, id) => a + f(s, node, id), 0);
export const nodeIntentsMem = (s: Snapshot, node: string): number => sum(s, node, intentsMem);
export const nodeRegularMem = (s: Snapshot, node: string): number => sum(s, node, regularMem);

/** (largest − smallest) / largest of the values; 0 for none. */
export function spreadOf(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const hi = Math.max(...values);
  return hi <= 0 ? 0 : (hi - Math.min(...values)) / hi;
}

/** Per tablet, the spread of its IntentsDB memtable bytes over the nodes. */
export function intentsSpreads(s: Snapshot, nodes: readonly string[]): Array<{ id: string; spread: number; bytes: number[] }> {
  return tabletIds(s).map((id) => {
    const bytes = nodes.map((n) => intentsMem(s, n, id));
    return { id, spread: spreadOf(bytes), bytes };
  });
}

/**
 * Per tablet: how much `node`'s RegularDB memtable grew from `before` to `after`, against the
 * tablet's IntentsDB memtable while open (the provisional records the apply turns into versions).
 */
export function regularGrowth(before: Snapshot, after: Snapshot, open: Snapshot, node: string): Array<{ id: string; grewBytes: number; intentsBytes: number; ratio: number }> {
  return tabletIds(after).map((id) => {
    const grewBytes = regularMem(after, node, id) - regularMem(before, node, id);
    const intentsBytes = intentsMem(open, node, id);
    return { id, grewBytes, intentsBytes, ratio: intentsBytes > 0 ? grewBytes / intentsBytes : 0 };
  });
}

/** The largest change of `node`'s RegularDB memtable (all tablets) over the samples in [fromMs, toMs], from `base`. */
export function largestRegularChange(samples: readonly Sample[], node: string, base: number, fromMs: number, toMs: number): { changeBytes: number; samples: number } {
  let changeBytes = 0;
  let n = 0;
  for (const x of samples) {
    if (x.atMs < fromMs || x.atMs > toMs || !x.snap.has(node)) continue;
    n++;
    changeBytes = Math.max(changeBytes, Math.abs(nodeRegularMem(x.snap, node) - base));
  }
  return { changeBytes, samples: n };
}

/** One line per tablet and node of a phase: role, intents, IntentsDB and RegularDB memtable and SST. */
export function phaseTable(phase: string, s: Snapshot, leaderNode?: (id: string) => string | undefined): string[] {
  const out = [`phase: ${phase}`, '  tablet    node  role      intents  IntentsDB mem/SST   RegularDB mem/SST'];
  for (const id of tabletIds(s)) {
    for (const [node, m] of [...s.entries()].sort(([a], [b]) => a.localeCompare(b))) {
      const r = m.get(id);
      if (!r) continue;
      const mark = leaderNode?.(id) === 'n0' ? '*' : ' ';
      out.push(
        `  ${id.slice(0, 8)}${mark} ${node.padEnd(4)}  ${r.role.padEnd(8)}  ${String(r.intentsdb.intentCount).padStart(7)}  ${`${humanBytes(r.intentsdb.memtableBytes)} / ${humanBytes(r.intentsdb.sstBytes)}`.padEnd(18)}  ${humanBytes(r.regulardb.memtableBytes)} / ${humanBytes(r.regulardb.sstBytes)}`,
      );
    }
  }
  return out;
}

/** Step series of each node's total (all tablets of the table) of one figure, one colour per node. */
export function nodeSeries(samples: readonly Sample[], nodes: readonly string[], pick: (s: Snapshot, node: string) => number): StepSeries[] {
  return nodes.map((n, i) => ({
    name: n,
    colour: NODE_COLOURS[i % NODE_COLOURS.length]!,
    strokeWidth: nodeStrokeWidth(i, nodes.length),
    points: samples.filter((x) => x.snap.has(n)).map((x) => [Math.round(x.atMs), pick(x.snap, n)] as const),
  }));
}
