/**
 * Elle-style list-append checker. Transactions are lists of micro-ops:
 *   ['append', key, value]   — value unique per key across the run
 *   ['r', key, list | null]  — in the invocation null; in the ok completion the list read
 * Because every append is unique and lists only grow, each read reveals a prefix of the key's version
 * order; from those prefixes we infer write-write (ww), write-read (wr) and read-write (rw, anti-
 * dependency) edges between committed transactions and classify cycles:
 *   G0 (ww only), G1c (ww + wr), G-single (exactly one rw), G2-item (two or more rw: write skew),
 * plus the non-cycle anomalies G1a (read of an aborted write), G1b (read of an intermediate write),
 * internal inconsistency, lost update, duplicates, incompatible orders and garbage reads.
 * Snapshot isolation forbids all of them except G2-item.
 */
import { pairCalls, type Call, type HistoryOp } from './history';
import { DepGraph, cyclicComponents, shortestPath, type EdgeKind } from './graph';

export type MicroOp = ['append', string, number | string] | ['r', string, Array<number | string> | null];

export const ANOMALIES = ['G0', 'G1a', 'G1b', 'G1c', 'G-single', 'G2-item', 'lost-update', 'internal', 'duplicate-elements', 'incompatible-order', 'garbage-read'] as const;
export type Anomaly = (typeof ANOMALIES)[number];

export interface AppendResult {
  valid: boolean;
  /** Anomalies the consistency model allows (G2-item under snapshot isolation). */
  allowed: Anomaly[];
  anomalies: Partial<Record<Anomaly, unknown[]>>;
  txns: { ok: number; fail: number; info: number };
}

interface Txn {
  id: number;
  call: Call;
  mops: MicroOp[];
}

const ALL: ReadonlySet<EdgeKind> = new Set<EdgeKind>(['ww', 'wr', 'rw']);
const WW: ReadonlySet<EdgeKind> = new Set<EdgeKind>(['ww']);
const WWWR: ReadonlySet<EdgeKind> = new Set<EdgeKind>(['ww', 'wr']);

/** Records one anomaly with its detail. */
type Report = (a: Anomaly, detail: unknown) => void;
/** A list value: the elements appended to a key. */
type ListValue = Array<number | string>;
/** Who wrote a (key, value), and whether it was that txn's last append to the key. */
type WriterIndex = Map<string, { txn: Txn; final: boolean }>;
/** A read of a key before the txn's own appends to it. */
interface ExternalRead {
  txn: Txn;
  key: string;
  list: ListValue;
}

/** The writer-index key for (key, value). */
function vk(k: string, v: unknown): string {
  return `${k}\u0000${String(v)}`;
}

export function checkListAppend(history: readonly HistoryOp[], model: 'snapshot-isolation' | 'serializable' = 'snapshot-isolation'): AppendResult {
  const anomalies: Partial<Record<Anomaly, unknown[]>> = {};
  const report: Report = (a, detail) => {
    (anomalies[a] ??= []).push(detail);
  };
  const txns: Txn[] = pairCalls(history)
    .filter((c) => c.f === 'txn')
    .map((c, id) => ({ id, call: c, mops: ((c.type === 'ok' ? c.value : c.invokeValue) ?? []) as MicroOp[] }));
  const counts = { ok: 0, fail: 0, info: 0 };
  for (const t of txns) counts[t.call.type]++;

  const writer = indexWriters(txns);
  const { externalReads, longest } = checkReads(txns, writer, report);
  checkVersionOrders(externalReads, longest, report);
  const { g, readsByKeyVersion } = buildDepGraph(longest, externalReads, writer);
  checkLostUpdates(readsByKeyVersion, txns, report);

  classifyCycles(g, report);
  const allowed: Anomaly[] = model === 'snapshot-isolation' ? ['G2-item'] : [];
  const bad = (Object.keys(anomalies) as Anomaly[]).filter((a) => !allowed.includes(a));
  return { valid: bad.length === 0, allowed: allowed.filter((a) => anomalies[a]), anomalies, txns: counts };
}

/** Index who wrote each (key, value), and whether it was that txn's last append to the key. */
function indexWriters(txns: readonly Txn[]): WriterIndex {
  const writer: WriterIndex = new Map();
  for (const t of txns) {
    const lastByKey = new Map<string, unknown>();
    for (const m of t.mops) if (m[0] === 'append') lastByKey.set(m[1], m[2]);
    for (const m of t.mops) if (m[0] === 'append') writer.set(vk(m[1], m[2]), { txn: t, final: lastByKey.get(m[1]) === m[2] });
  }
  return writer;
}

/** Check each read's values: duplicates, garbage reads, G1a (aborted write) and G1b (intermediate write). */
function checkReadValues(t: Txn, key: string, list: ListValue, writer: WriterIndex, report: Report): void {
  if (new Set(list.map(String)).size !== list.length) report('duplicate-elements', { txn: t.id, key, list });
  for (const v of list) {
    const w = writer.get(vk(key, v));
    if (!w) report('garbage-read', { txn: t.id, key, value: v });
    else if (w.txn.call.type === 'fail') report('G1a', { txn: t.id, key, value: v, writer: w.txn.id });
  }
  const last = list[list.length - 1];
  if (last !== undefined) {
    const w = writer.get(vk(key, last));
    if (w && w.txn !== t && !w.final) report('G1b', { txn: t.id, key, value: last, writer: w.txn.id });
  }
}

/** Walk ok txns' reads: collect external reads and the longest read per key, check reads and internal consistency. */
function checkReads(txns: readonly Txn[], writer: WriterIndex, report: Report): { externalReads: ExternalRead[]; longest: Map<string, ListValue> } {
  // External reads (before the txn's own appends to that key), internal consistency, read checks.
  const externalReads: ExternalRead[] = [];
  const longest = new Map<string, ListValue>();
  for (const t of txns) {
    if (t.call.type !== 'ok') continue;
    const known = new Map<string, ListValue | undefined>();
    const ownAppends = new Map<string, ListValue>();
    for (const m of t.mops) {
      if (m[0] === 'append') {
        const own = ownAppends.get(m[1]) ?? [];
        own.push(m[2]);
        ownAppends.set(m[1], own);
        continue;
      }
      const [, key, listRaw] = m;
      const list = listRaw ?? [];
      checkReadValues(t, key, list, writer, report);
      const own = ownAppends.get(key) ?? [];
      if (own.length === 0 && !known.has(key)) {
        externalReads.push({ txn: t, key, list });
      } else {
        // Internal: a later read must equal the earlier view plus this txn's own appends since.
        const base = known.get(key);
        const tail = list.slice(list.length - own.length);
        const ownOk = own.length === 0 || JSON.stringify(tail) === JSON.stringify(own);
        const baseOk = base === undefined || JSON.stringify(list.slice(0, base.length)) === JSON.stringify(base);
        if (!ownOk || !baseOk) report('internal', { txn: t.id, key, read: list, expectedPrefix: base, ownAppends: own });
      }
      known.set(key, list.slice(0, list.length - own.length));
      ownAppends.set(key, []);
      if (list.length > (longest.get(key)?.length ?? -1)) longest.set(key, list);
    }
  }
  return { externalReads, longest };
}

/** Report external reads that are not a prefix of their key's longest read. */
function checkVersionOrders(externalReads: readonly ExternalRead[], longest: Map<string, ListValue>, report: Report): void {
  // Version order per key = the longest read; every read must be a prefix of it.
  for (const r of externalReads) {
    const lo = longest.get(r.key) ?? [];
    if (JSON.stringify(lo.slice(0, r.list.length)) !== JSON.stringify(r.list)) report('incompatible-order', { key: r.key, read: r.list, longest: lo });
  }
}

/** Build the ww/wr/rw dependency graph, and group external readers by (key, version read). */
function buildDepGraph(longest: Map<string, ListValue>, externalReads: readonly ExternalRead[], writer: WriterIndex): { g: DepGraph; readsByKeyVersion: Map<string, number[]> } {
  // Dependency graph over transactions that committed (ok) or whose writes were observed (info).
  const g = new DepGraph();
  for (const [key, order] of longest) {
    for (let i = 0; i + 1 < order.length; i++) {
      const a = writer.get(vk(key, order[i]));
      const b = writer.get(vk(key, order[i + 1]));
      if (a && b) g.add(a.txn.id, b.txn.id, 'ww');
    }
  }
  const readsByKeyVersion = new Map<string, number[]>();
  for (const r of externalReads) {
    const order = longest.get(r.key) ?? [];
    const last = r.list[r.list.length - 1];
    if (last !== undefined) {
      const w = writer.get(vk(r.key, last));
      if (w) g.add(w.txn.id, r.txn.id, 'wr');
    }
    const next = order[r.list.length];
    if (next !== undefined) {
      const w = writer.get(vk(r.key, next));
      if (w) g.add(r.txn.id, w.txn.id, 'rw');
    }
    const sig = `${r.key}\u0000${r.list.length}`;
    const arr = readsByKeyVersion.get(sig) ?? [];
    arr.push(r.txn.id);
    readsByKeyVersion.set(sig, arr);
  }
  return { g, readsByKeyVersion };
}

/** Report lost updates: two committed txns read the same version of a key and both appended to it. */
function checkLostUpdates(readsByKeyVersion: Map<string, number[]>, txns: readonly Txn[], report: Report): void {
  for (const [sig, readers] of readsByKeyVersion) {
    const key = sig.split('\u0000')[0]!;
    const appenders = readers.filter((id) => txns[id]!.mops.some((m) => m[0] === 'append' && m[1] === key));
    if (appenders.length > 1) report('lost-update', { key, txns: appenders });
  }
}

function classifyCycles(g: DepGraph, report: (a: Anomaly, d: unknown) => void): void {
  const describe = (path: number[]): Array<{ from: number; to: number; kinds: EdgeKind[] }> =>
    path.slice(0, -1).map((n, i) => ({ from: n, to: path[i + 1]!, kinds: [...g.kinds(n, path[i + 1]!)] }));
  const reported = new Set<string>();
  const once = (a: Anomaly, path: number[]): void => {
    const sig = `${a}:${[...path].sort((x, y) => x - y).join(',')}`;
    if (reported.has(sig)) return;
    reported.add(sig);
    report(a, { cycle: describe(path) });
  };
  const inCycle = new Set<number>();
  for (const comp of cyclicComponents(g, WW)) {
    const p = shortestPath(g, comp[0]!, comp[0]!, WW, new Set(comp));
    if (p) once('G0', p);
    for (const n of comp) inCycle.add(n);
  }
  for (const comp of cyclicComponents(g, WWWR)) {
    const set = new Set(comp);
    const p = shortestPath(g, comp[0]!, comp[0]!, WWWR, set);
    if (p && !p.every((n) => inCycle.has(n))) once('G1c', p);
  }
  // G-single: an rw edge T→W closed by a ww/wr path W ⇝ T. G2-item: any other cycle through rw edges.
  for (const comp of cyclicComponents(g, ALL)) {
    const set = new Set(comp);
    let single = false;
    for (const t of comp) {
      for (const w of g.succ(t, new Set<EdgeKind>(['rw']))) {
        if (!set.has(w)) continue;
        const back = shortestPath(g, w, t, WWWR, set);
        if (back) {
          once('G-single', [t, ...back]);
          single = true;
        }
      }
    }
    if (!single) {
      const p = shortestPath(g, comp[0]!, comp[0]!, ALL, set);
      if (p && describe(p).some((e) => e.kinds.includes('rw'))) once('G2-item', p);
    }
  }
}
