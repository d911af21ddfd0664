/**
 * Model-based test of DocDB (fast-check commands): random non-transactional upserts/deletes with TTLs,
 * transactions that write, commit, abort and apply (in small chunks, sometimes stopped midway),
 * GC, restarts, point reads and paged scans at random times — each read checked against a plain MVCC
 * model: a list of committed row operations per key, replayed up to the read time. Columns get dropped
 * (ALTER TABLE): later writes leave them out, but transactions that wrote them before still commit and
 * apply; the model then ignores them at every read time, and GC must leave none of their versions.
 * Run against both engines by docdb-model-*.test.ts.
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import { isDbError } from '../../common/errors';
import { htPhysicalMicros } from '../../common/hybrid-time';
import { TxnId } from '../../common/ids';
import { DocDb } from '../../docdb/doc-db';
import type { Primitive, RowOp } from '../../docdb/doc-db-api';
import type { KvEngine } from '../../docdb/kv-engine';
import { encodeRowDocKey } from '../../docdb/storage-keys';
import { ht, key, Statuses, storedVersions } from './docdb-helpers';

const KEYS = 5;
/** Column ids of the model's table (rowOpArb writes 1..COLUMNS). */
const COLUMNS = 3;

interface Ev {
  t: number;
  seq: number;
  op: RowOp;
}
interface MTxn {
  id: string;
  startT: number;
  ops: Array<{ t: number; op: RowOp }>;
  state: 'open' | 'committed' | 'aborted';
  applied: boolean;
}
export interface Model {
  clock: number;
  seq: number;
  opIndex: number;
  events: Ev[][];
  txns: MTxn[];
  minReadT: number;
  /** Column ids dropped so far (never given again). */
  dropped: Set<number>;
}
export interface Real {
  db: DocDb;
  st: Statuses;
  /** Close and open again; `crash`: close only the engines (DocDB's deferred clean-ups are never written). */
  reopen: (db: DocDb, crash: boolean) => Promise<DocDb>;
}

function idOf(op: RowOp): number {
  return Number(op.key.hashed[0] as bigint);
}

/** Row content at readT: committed events <= readT, then (own txn) its writes in order. */
function modelRow(m: Model, k: number, readT: number, own?: MTxn): Map<number, Primitive> | undefined {
  const evs = m.events[k]!.filter((e) => e.t <= readT).sort((a, b) => a.t - b.t || a.seq - b.seq).map((e) => ({ t: e.t, op: e.op }));
  if (own) evs.push(...own.ops.filter((o) => idOf(o.op) === k));
  let live: number | undefined;
  const cols = new Map<number, { v: Primitive; exp: number }>();
  for (const { t, op } of evs) {
    if (op.type === 'delete') {
      live = undefined;
      cols.clear();
    } else if (op.type === 'upsert') {
      const exp = op.ttlMs === undefined ? Infinity : t + op.ttlMs / 1000;
      live = exp;
      for (const c of op.columns) if (!m.dropped.has(c.columnId)) cols.set(c.columnId, { v: c.value, exp });
    }
  }
  const out = new Map<number, Primitive>();
  for (const [c, { v, exp }] of cols) if (v !== null && readT < exp) out.set(c, v);
  if (out.size === 0 && !(live !== undefined && readT < live)) return undefined;
  return out;
}

/** Largest committed event time in (readT, limitT] for key k, if any. */
function modelRestart(m: Model, k: number, readT: number, limitT: number): number | undefined {
  let r: number | undefined;
  for (const e of m.events[k]!) if (e.t > readT && e.t <= limitT && (r === undefined || e.t > r)) r = e.t;
  return r;
}

const sortedKeys = (): number[] => [...Array(KEYS).keys()].sort((a, b) => Buffer.compare(encodeRowDocKey(key(a)), encodeRowDocKey(key(b))));

const nextOp = (m: Model) => ({ term: 1, index: ++m.opIndex });

const rowOpArb: fc.Arbitrary<RowOp> = fc.oneof(
  { weight: 4, arbitrary: fc.record({
    k: fc.integer({ min: 0, max: KEYS - 1 }),
    cols: fc.uniqueArray(fc.record({ columnId: fc.integer({ min: 1, max: COLUMNS }), value: fc.oneof(fc.constant(null), fc.integer({ min: 0, max: 9 }).map(BigInt)) }), { selector: (c) => c.columnId, maxLength: 3 }),
    ttl: fc.option(fc.constantFrom(1000, 3000), { nil: undefined }),
  }).map(({ k, cols, ttl }): RowOp => (ttl === undefined ? { type: 'upsert', key: key(k), columns: cols } : { type: 'upsert', key: key(k), columns: cols, ttlMs: ttl })) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: KEYS - 1 }).map((k): RowOp => ({ type: 'delete', key: key(k) })) },
);

type Cmd = fc.AsyncCommand<Model, Real>;

/** `ops` as a client on the current schema writes them: without the dropped columns. */
function withoutDropped(m: Readonly<Model>, ops: readonly RowOp[]): RowOp[] {
  if (m.dropped.size === 0) return [...ops];
  return ops.map((o) => (o.type !== 'upsert' ? o : { ...o, columns: o.columns.filter((c) => !m.dropped.has(c.columnId)) }));
}

/** The schema's column ids as the tablet tells DocDB (undefined while none was dropped). */
function schemaColumns(m: Readonly<Model>): number[] | undefined {
  if (m.dropped.size === 0) return undefined;
  return Array.from({ length: COLUMNS }, (_, i) => i + 1).filter((c) => !m.dropped.has(c));
}

class RegularWrite implements Cmd {
  constructor(readonly ops: RowOp[]) {}
  check = (): boolean => true;
  async run(m: Model, r: Real): Promise<void> {
    const t = ++m.clock;
    const ops = withoutDropped(m, this.ops);
    await r.db.writeRegular(ops, ht(t), nextOp(m));
    for (const op of ops) m.events[idOf(op)]!.push({ t, seq: m.seq++, op });
  }
  toString = (): string => `RegularWrite(${JSON.stringify(this.ops, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v))})`;
}

class TxnBegin implements Cmd {
  check = (m: Readonly<Model>): boolean => m.txns.filter((t) => t.state === 'open').length < 3;
  run(m: Model): Promise<void> {
    m.txns.push({ id: `t${m.txns.length}`, startT: m.clock, ops: [], state: 'open', applied: false });
    return Promise.resolve();
  }
  toString = (): string => 'TxnBegin';
}

const openTxn = (m: Readonly<Model>, i: number): MTxn | undefined => {
  const open = m.txns.filter((t) => t.state === 'open');
  return open.length ? open[i % open.length] : undefined;
};

class TxnWrite implements Cmd {
  constructor(readonly i: number, readonly ops: RowOp[]) {}
  check = (m: Readonly<Model>): boolean => openTxn(m, this.i) !== undefined;
  async run(m: Model, r: Real): Promise<void> {
    const tx = openTxn(m, this.i)!;
    const t = ++m.clock;
    const ops = withoutDropped(m, this.ops);
    await r.db.writeIntents({ txnId: TxnId(tx.id), statusTablet: 's', isolation: 'snapshot', priority: 1, startHt: ht(tx.startT) }, ops, ht(t), nextOp(m));
    for (const op of ops) tx.ops.push({ t, op });
  }
  toString = (): string => `TxnWrite(${this.i}, ${this.ops.length} ops)`;
}

class TxnCommit implements Cmd {
  constructor(readonly i: number) {}
  check = (m: Readonly<Model>): boolean => openTxn(m, this.i) !== undefined;
  run(m: Model, r: Real): Promise<void> {
    const tx = openTxn(m, this.i)!;
    const t = ++m.clock;
    tx.state = 'committed';
    r.st.commit(tx.id, ht(t));
    for (const o of tx.ops) m.events[idOf(o.op)]!.push({ t, seq: m.seq++, op: o.op });
    return Promise.resolve();
  }
  toString = (): string => `TxnCommit(${this.i})`;
}

class TxnAbort implements Cmd {
  constructor(readonly i: number) {}
  check = (m: Readonly<Model>): boolean => openTxn(m, this.i) !== undefined;
  async run(m: Model, r: Real): Promise<void> {
    const tx = openTxn(m, this.i)!;
    tx.state = 'aborted';
    r.st.abort(tx.id);
    await r.db.removeIntents(TxnId(tx.id), nextOp(m));
  }
  toString = (): string => `TxnAbort(${this.i})`;
}

class TxnApply implements Cmd {
  constructor(readonly i: number, readonly chunk: number, readonly chunksMax: number | undefined) {}
  private pick = (m: Readonly<Model>): MTxn | undefined => {
    const c = m.txns.filter((t) => t.state === 'committed' && !t.applied);
    return c.length ? c[this.i % c.length] : undefined;
  };
  check = (m: Readonly<Model>): boolean => this.pick(m) !== undefined;
  async run(m: Model, r: Real): Promise<void> {
    const tx = this.pick(m)!;
    const commitHt = (r.st.map.get(tx.id) as { commitHt: bigint }).commitHt;
    const p = await r.db.applyIntents(TxnId(tx.id), commitHt, nextOp(m), this.chunk, this.chunksMax);
    if (p.done) tx.applied = true;
  }
  toString = (): string => `TxnApply(${this.i}, chunk=${this.chunk}, chunksMax=${this.chunksMax})`;
}

/**
 * Every committed, unapplied transaction applied together as the participant's apply worker does:
 * marked pending in one RegularDB batch (with `rows`, a plain write of the same batch), then
 * DocDb.applyIntentsMany (one versions batch for the small ones, their intent deletes deferred; the
 * rest one by one) — or, `now`, the small ones applied inside that first batch (as a replica does
 * without TEST_inject_sleep_before_applying_intents_ms). The deferred clean-ups are flushed only
 * sometimes (a restart must cope, a crash too).
 */
class TxnApplyMany implements Cmd {
  constructor(readonly flush: boolean, readonly now: boolean) {}
  check = (m: Readonly<Model>): boolean => m.txns.some((t) => t.state === 'committed' && !t.applied);
  async run(m: Model, r: Real): Promise<void> {
    const txns = m.txns.filter((t) => t.state === 'committed' && !t.applied);
    const items = txns.map((tx) => ({ txnId: TxnId(tx.id), commitHt: (r.st.map.get(tx.id) as { commitHt: bigint }).commitHt, opId: nextOp(m) }));
    const marks = await r.db.writeRegularMany([], items, this.now);
    // A txn that wrote nothing has nothing to apply.
    if (!this.now) expect(marks).toEqual(txns.map((tx) => (tx.ops.length > 0 ? 'pending' : 'none')));
    else expect(marks.map((k) => k === 'none')).toEqual(txns.map((tx) => tx.ops.length === 0));
    await r.db.applyIntentsMany(items.filter((_, i) => marks[i] === 'pending'));
    for (const tx of txns) tx.applied = true;
    expect((await r.db.applyStates()).filter((s) => items.some((i) => i.txnId === s.meta.txnId))).toEqual([]);
    if (this.flush) await r.db.flushDeferred();
  }
  toString = (): string => `TxnApplyMany(flush=${this.flush}, now=${this.now})`;
}

const readT = (m: Readonly<Model>, d: number): number => m.minReadT + (d % (m.clock - m.minReadT + 2));

class Read implements Cmd {
  constructor(readonly k: number, readonly d: number, readonly asTxn: number | undefined, readonly window: boolean) {}
  check = (): boolean => true;
  async run(m: Model, r: Real): Promise<void> {
    const t = readT(m, this.d);
    const own = this.asTxn === undefined ? undefined : openTxn(m, this.asTxn);
    const opts = { readHt: ht(t), resolveStatus: r.st.resolve, ...(own ? { txnId: TxnId(own.id) } : {}), ...(this.window ? { globalLimitHt: ht(t + 2) } : {}) };
    const restart = this.window ? modelRestart(m, this.k, t, t + 2) : undefined;
    const got = await r.db.getRow(key(this.k), opts).then(
      (row) => ({ row }),
      (e: unknown) => ({ err: e }),
    );
    if (restart !== undefined) {
      expect('err' in got && isDbError(got.err, 'READ_RESTART')).toBe(true);
      expect((got as { err: { details: Record<string, unknown> } }).err.details['restartHt']).toBe(ht(restart).toString());
      return;
    }
    if ('err' in got) throw got.err;
    const want = modelRow(m, this.k, t, own);
    expect(got.row ? Object.fromEntries(got.row.columns) : undefined).toEqual(want ? Object.fromEntries(want) : undefined);
  }
  toString = (): string => `Read(k=${this.k}, d=${this.d}, txn=${this.asTxn}, window=${this.window})`;
}

class Scan implements Cmd {
  constructor(readonly d: number, readonly limit: number) {}
  check = (): boolean => true;
  async run(m: Model, r: Real): Promise<void> {
    const t = readT(m, this.d);
    const got: Array<[number, Record<number, Primitive>]> = [];
    let resume: Uint8Array | undefined;
    for (let page = 0; page <= KEYS; page++) {
      const res = await r.db.scan({ readHt: ht(t), resolveStatus: r.st.resolve, limit: this.limit, ...(resume ? { startKey: resume } : {}) });
      for (const row of res.rows) got.push([Number(row.key.hashed[0] as bigint), Object.fromEntries(row.columns)]);
      resume = res.resumeKey;
      if (!resume) break;
    }
    expect(resume).toBeUndefined();
    const want: Array<[number, Record<number, Primitive>]> = [];
    for (const k of sortedKeys()) {
      const row = modelRow(m, k, t);
      if (row) want.push([k, Object.fromEntries(row)]);
    }
    expect(got).toEqual(want);
  }
  toString = (): string => `Scan(d=${this.d}, limit=${this.limit})`;
}

class Gc implements Cmd {
  constructor(readonly d: number) {}
  check = (): boolean => true;
  async run(m: Model, r: Real): Promise<void> {
    const want = m.minReadT + (this.d % (m.clock - m.minReadT + 1));
    const res = await r.db.gc(ht(want));
    expect(res.cutoffHt <= ht(want)).toBe(true);
    // The cutoff may fall between two model times (one tick below a commit time being applied):
    // reads from the first model time at or above it remain supported.
    const floorT = Number(htPhysicalMicros(res.cutoffHt) / 1_000_000n);
    const usedT = res.cutoffHt === ht(floorT) ? floorT : floorT + 1;
    m.minReadT = Math.max(m.minReadT, usedT);
    // No version of a dropped column is left, whenever it was written or applied.
    expect([...(await storedVersions(r.db)).keys()].filter((c) => c.startsWith('c') && m.dropped.has(Number(c.slice(1))))).toEqual([]);
  }
  toString = (): string => `Gc(d=${this.d})`;
}


/** ALTER TABLE ... DROP COLUMN: the tablet gives DocDB the schema's remaining column ids. */
class DropColumn implements Cmd {
  constructor(readonly columnId: number) {}
  check = (m: Readonly<Model>): boolean => !m.dropped.has(this.columnId);
  run(m: Model, r: Real): Promise<void> {
    m.dropped.add(this.columnId);
    r.db.setSchemaColumns(schemaColumns(m));
    return Promise.resolve();
  }
  toString = (): string => `DropColumn(${this.columnId})`;
}

class Restart implements Cmd {
  constructor(readonly crash: boolean) {}
  check = (): boolean => true;
  async run(m: Model, r: Real): Promise<void> {
    const before = (await r.db.sizes()).intentsdb.intentCount;
    const applying = new Set<string>((await r.db.applyStates()).map((st) => st.meta.txnId));
    r.db = await r.reopen(r.db, this.crash);
    // As a tablet does at open, from its meta.json.
    r.db.setSchemaColumns(schemaColumns(m));
    if (!this.crash) {
      expect((await r.db.sizes()).intentsdb.intentCount).toBe(before);
      return;
    }
    // As a tablet does at open: finish every apply with a persisted state — those a chunked apply
    // left half done, and those whose deferred clean-up the crash cut short (their intents are still
    // on disk: the same versions again, then the deletes).
    await r.db.resumeApplies();
    for (const tx of m.txns) if (applying.has(tx.id)) tx.applied = true;
    expect(await r.db.applyStates()).toEqual([]);
    expect((await r.db.sizes()).intentsdb.intentCount).toBeLessThanOrEqual(before);
  }
  toString = (): string => `Restart(crash=${this.crash})`;
}

export function docDbCommands(): fc.Arbitrary<Iterable<Cmd>> {
  const i = fc.nat(5);
  return fc.commands(
    [
      fc.array(rowOpArb, { minLength: 1, maxLength: 3 }).map((ops) => new RegularWrite(ops)),
      fc.constant(new TxnBegin()),
      fc.tuple(i, fc.array(rowOpArb, { minLength: 1, maxLength: 3 })).map(([x, ops]) => new TxnWrite(x, ops)),
      i.map((x) => new TxnCommit(x)),
      i.map((x) => new TxnAbort(x)),
      fc.tuple(i, fc.integer({ min: 1, max: 3 }), fc.option(fc.integer({ min: 1, max: 2 }), { nil: undefined })).map(([x, c, n]) => new TxnApply(x, c, n)),
      fc.tuple(fc.boolean(), fc.boolean()).map(([f, n]) => new TxnApplyMany(f, n)),
      fc.tuple(fc.integer({ min: 0, max: KEYS - 1 }), fc.nat(100), fc.option(i, { nil: undefined }), fc.boolean()).map(([k, d, tx, w]) => new Read(k, d, tx, w)),
      fc.tuple(fc.nat(100), fc.integer({ min: 1, max: 3 })).map(([d, l]) => new Scan(d, l)),
      fc.nat(100).map((d) => new Gc(d)),
      fc.integer({ min: 1, max: COLUMNS }).map((c) => new DropColumn(c)),
      fc.boolean().map((c) => new Restart(c)),
    ],
    { maxCommands: 40, size: 'max' },
  );
}

export function newModel(): Model {
  return { clock: 1, seq: 0, opIndex: 0, events: Array.from({ length: KEYS }, () => []), txns: [], minReadT: 0, dropped: new Set() };
}

/** After a run: commit/abort is up to the run, but applying or removing everything must empty IntentsDB. */
export async function drainAndCheck(m: Model, r: Real): Promise<void> {
  for (const tx of m.txns) {
    if (tx.state === 'committed' && !tx.applied) {
      const commitHt = (r.st.map.get(tx.id) as { commitHt: bigint }).commitHt;
      expect((await r.db.applyIntents(TxnId(tx.id), commitHt, nextOp(m), 2)).done).toBe(true);
    } else if (tx.state === 'open') {
      await r.db.removeIntents(TxnId(tx.id), nextOp(m));
      tx.state = 'aborted';
    }
  }
  // What a clean stop does: the deferred clean-ups of applyIntentsMany are written.
  await r.db.flushDeferred();
  expect((await r.db.sizes()).intentsdb.intentCount).toBe(0);
  expect(await r.db.listTransactions()).toEqual([]);
  const t = m.clock + 1;
  for (const k of sortedKeys()) {
    const row = await r.db.getRow(key(k), { readHt: ht(t), resolveStatus: r.st.resolve });
    const want = modelRow(m, k, t);
    expect(row ? Object.fromEntries(row.columns) : undefined).toEqual(want ? Object.fromEntries(want) : undefined);
  }
}

export async function runModel(open: () => Promise<{ db: DocDb; reopen: Real['reopen'] }>, numRuns: number, seed?: number): Promise<void> {
  await fc.assert(
    fc.asyncProperty(docDbCommands(), async (cmds) => {
      const o = await open();
      const real: Real = { db: o.db, st: new Statuses(), reopen: o.reopen };
      const model = newModel();
      try {
        await fc.asyncModelRun(() => ({ model, real }), cmds);
        await drainAndCheck(model, real);
      } finally {
        await real.db.close();
      }
    }),
    { numRuns, ...(seed !== undefined ? { seed } : {}) },
  );
}

export type EngineOpen = () => Promise<{ regular: KvEngine; intents: KvEngine }>;
