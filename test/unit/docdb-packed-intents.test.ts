/**
 * Packed intents (docdb/packed-intent.ts, flag txn_packed_intents) against the per-cell format, and
 * head intents (a lone intent of a transaction's first batch carrying its metadata, no reverse entry;
 * flag txn_lone_intent_meta) against reverse entries, as a model: the same random write batches of
 * several transactions go to four DocDBs — one packing upserts with head intents, one packing with
 * reverse entries only, one writing per cell with reverse entries only, one flipping both flags
 * between batches (a mixed IntentsDB), some reopened on the way and before the end (the records then
 * come from the engine) — and they must give the same reads (own writes, committed and pending
 * others), the same pending digest, the same listed transactions (both packing ones), conflicts at
 * least as strict as the per-cell format's (whichever format is stored and whichever the checker
 * uses), and after commits and aborts (applied in chunks of 2 records) byte-identical RegularDB
 * contents and an empty IntentsDB.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Flags } from '../../common/flags';
import { TxnId } from '../../common/ids';
import { DocDb } from '../../docdb/doc-db';
import type { ReadLocks, RowOp, TxnMeta } from '../../docdb/doc-db-api';
import { MemoryEngine } from '../../docdb/memory-engine';
import { decodePackedCells, encodePackedIntentValue, isPacked, PACKED_ROW_TAG, subKindOfSuffix } from '../../docdb/packed-intent';
import { encodeIntentValue, intentValueMeta, splitIntentValue, withIntentMeta, withoutIntentMeta } from '../../docdb/storage-keys';
import { ht, key, op, Statuses, txnMeta } from './docdb-helpers';

const KEYS = 4;
const TXNS = ['a', 'b', 'c'] as const;
/** b is serializable (its reads take row locks), a and c snapshot. */
const meta = (id: string): TxnMeta => (id === 'b' ? { ...txnMeta(id), isolation: 'serializable' } : txnMeta(id));

const valueArb = fc.oneof(fc.string({ maxLength: 6 }), fc.bigInt({ min: -5n, max: 5n }), fc.constant(null));
const rowOpArb: fc.Arbitrary<RowOp> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ k: fc.nat(KEYS - 1), cols: fc.uniqueArray(fc.integer({ min: 1, max: 3 }), { maxLength: 3 }), vals: fc.array(valueArb, { minLength: 3, maxLength: 3 }), ttl: fc.option(fc.integer({ min: 1000, max: 5000 }), { nil: undefined }) }).map(
    ({ k, cols, vals, ttl }): RowOp => ({ type: 'upsert', key: key(k), columns: cols.map((c, i) => ({ columnId: c, value: vals[i]! })), ...(ttl === undefined ? {} : { ttlMs: ttl }) }),
  ) },
  { weight: 1, arbitrary: fc.nat(KEYS - 1).map((k): RowOp => ({ type: 'delete', key: key(k) })) },
);
const batchArb = fc.record({ txn: fc.constantFrom(...TXNS), ops: fc.array(rowOpArb, { minLength: 0, maxLength: 3 }), readRow: fc.option(fc.nat(KEYS - 1), { nil: undefined }), pack: fc.boolean(), loneMeta: fc.boolean(), reopen: fc.boolean() });
const scenarioArb = fc.record({
  batches: fc.array(batchArb, { minLength: 1, maxLength: 8 }),
  fates: fc.array(fc.constantFrom('commit', 'abort', 'pending'), { minLength: 3, maxLength: 3 }),
  probes: fc.array(fc.record({ ops: fc.array(rowOpArb, { minLength: 1, maxLength: 2 }), serializable: fc.boolean() }), { minLength: 1, maxLength: 3 }),
  reopenBeforeEnd: fc.boolean(),
});

type Replica = { db: DocDb; flags: Flags; regular: MemoryEngine; intents: MemoryEngine; mode: 'packed' | 'packedReverse' | 'perCell' | 'mixed' };

async function open(mode: Replica['mode']): Promise<Replica> {
  const flags = new Flags();
  if (mode === 'perCell') flags.setFromString('txn_packed_intents', false);
  if (mode === 'perCell' || mode === 'packedReverse') flags.setFromString('txn_lone_intent_meta', false);
  const regular = new MemoryEngine();
  const intents = new MemoryEngine();
  return { db: await DocDb.open({ regular, intents, flags }), flags, regular, intents, mode };
}

async function reopen(r: Replica): Promise<void> {
  await r.db.close();
  r.regular = r.regular.reopen();
  r.intents = r.intents.reopen();
  r.db = await DocDb.open({ regular: r.regular, intents: r.intents, flags: r.flags });
}

/** IntentsDB records left (intents, reverse entries, metadata: every key at or above 0x20; below it the frontier). */
async function recordsLeft(e: MemoryEngine): Promise<number> {
  let n = 0;
  const it = e.iterator({ gte: Buffer.from([0x20]) });
  for (let x = await it.next(); x !== undefined; x = await it.next()) n++;
  await it.close();
  return n;
}

/** Every row each reader sees: each transaction its own writes, and an outside reader at two times. */
async function reads(db: DocDb, st: Statuses): Promise<unknown[]> {
  const out: unknown[] = [];
  const show = (r: { columns: Map<number, unknown>; writeHt: bigint } | undefined) => (r ? [[...r.columns].sort((x, y) => x[0] - y[0]), r.writeHt] : undefined);
  for (const reader of [...TXNS, undefined]) {
    for (const readHt of [ht(100), ht(300)]) {
      const o = { readHt, resolveStatus: st.resolve, ...(reader ? { txnId: TxnId(reader) } : {}) };
      for (let k = 0; k < KEYS; k++) out.push(show(await db.getRow(key(k), o)));
      out.push((await db.scan(o)).rows.map(show));
    }
  }
  return out;
}

async function conflictTxns(db: DocDb, txn: TxnMeta, ops: readonly RowOp[]): Promise<Set<string>> {
  const c = await db.findConflicts(txn, ops, ht(1));
  return new Set(c.flatMap((x) => (x.type === 'intent' ? [x.txnId as string] : [])));
}

describe('packed intents', () => {
  it('packed intent value: cells round-trip (suffix, write id, encoded value); it is no plain value', () => {
    const v = encodePackedIntentValue(TxnId('t-1'), [
      { suffix: Buffer.from([0x4a, 0x00]), writeId: 4, value: { type: 'liveness' } },
      { suffix: Buffer.from([0x4b, 0x02]), writeId: 6, value: { type: 'primitive', value: 'x', ttlMs: 9 } },
    ]);
    const h = splitIntentValue(v);
    expect([h.txnId, h.writeId]).toEqual(['t-1', 4]);
    expect(isPacked(h.encoded)).toBe(true);
    expect(h.encoded![0]).toBe(PACKED_ROW_TAG);
    const cells = decodePackedCells(h.encoded!);
    expect(cells.map((c) => [subKindOfSuffix(c.suffix), c.writeId])).toEqual([[{ kind: 'liveness' }, 4], [{ kind: 'column', id: 2 }, 6]]);
    expect(() => decodePackedCells(h.encoded!.subarray(0, h.encoded!.length - 1))).toThrow();
  });

  it('head intent value: the carried metadata round-trips, readers of the value skip it, and stripping it gives the value back', () => {
    const meta = Buffer.from('{"m":1}');
    for (const v of [encodeIntentValue(TxnId('t-1'), 3, undefined), encodeIntentValue(TxnId('t-1'), 3, { type: 'tombstone' }), encodePackedIntentValue(TxnId('t-1'), [{ suffix: Buffer.from([0x4a, 0x00]), writeId: 3, value: { type: 'liveness' } }])]) {
      const h = withIntentMeta(v, meta);
      expect(intentValueMeta(h)).toEqual(meta);
      expect(intentValueMeta(v)).toBeUndefined();
      expect(splitIntentValue(h)).toEqual(splitIntentValue(v));
      expect(withoutIntentMeta(h)).toEqual(v);
      expect(() => withIntentMeta(h, meta)).toThrow();
      expect(() => intentValueMeta(h.subarray(0, v[1]! + 9))).toThrow();
    }
  });

  it('property: packed, per-cell and mixed IntentsDBs, with head intents or reverse entries (reopened at random), read, digest, list and apply alike; packed conflicts are never weaker', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (s) => {
        const reps = [await open('packed'), await open('perCell'), await open('mixed'), await open('packedReverse')];
        let t = 10;
        for (const [i, b] of s.batches.entries()) {
          const locks: ReadLocks | undefined = b.txn === 'b' && b.readRow !== undefined ? { rows: [key(b.readRow)], tablet: false } : undefined;
          for (const r of reps) {
            if (r.mode === 'mixed') r.flags.setAtRuntime('txn_packed_intents', b.pack);
            if (r.mode === 'mixed') r.flags.setAtRuntime('txn_lone_intent_meta', b.loneMeta);
            await r.db.writeIntents(meta(b.txn), b.ops, ht(t), op(i + 1), locks);
            if (b.reopen && r.mode !== 'perCell') await reopen(r);
          }
          t += 10;
        }
        const st = new Statuses();
        s.fates.forEach((f, i) => (f === 'commit' ? st.commit(TXNS[i]!, ht(200 + i)) : f === 'abort' ? st.abort(TXNS[i]!) : undefined));
        const base = reps[1]!;
        const want = await reads(base.db, st);
        const digest = await base.db.pendingIntentsDigest();
        for (const r of [reps[0]!, reps[2]!, reps[3]!]) {
          expect(await reads(r.db, st)).toEqual(want);
          expect(await r.db.pendingIntentsDigest()).toEqual(digest);
        }
        // Head intents or reverse entries: the same transactions, metadata and strong intent records.
        expect(await reps[0]!.db.listTransactions()).toEqual(await reps[3]!.db.listTransactions());
        expect((await reps[2]!.db.listTransactions()).map((t) => t.meta)).toEqual((await reps[1]!.db.listTransactions()).map((t) => t.meta));
        // Conflicts: the per-cell format checked per cell is the reference; every other pairing
        // (packed stored and/or a packed check) finds at least those transactions.
        for (const p of s.probes) {
          const probe: TxnMeta = p.serializable ? { ...txnMeta('p'), isolation: 'serializable' } : txnMeta('p');
          const ref = await conflictTxns(base.db, probe, p.ops);
          for (const r of reps) {
            for (const packCheck of [false, true]) {
              r.flags.setAtRuntime('txn_packed_intents', packCheck);
              const got = await conflictTxns(r.db, probe, p.ops);
              for (const id of ref) expect(got.has(id), `${r.mode} stored, ${packCheck ? 'packed' : 'per-cell'} check misses ${id}`).toBe(true);
            }
          }
        }
        // Commit or abort everything, then RegularDB is byte for byte the same and IntentsDB empty.
        let n = 100;
        for (const r of reps) {
          if (s.reopenBeforeEnd) await reopen(r);
          for (const [i, id] of TXNS.entries()) {
            if (s.fates[i] === 'commit') {
              await r.db.markApplyPending(TxnId(id), ht(200 + i), op(n));
              expect((await r.db.applyIntents(TxnId(id), ht(200 + i), op(n++), 2)).done).toBe(true);
            } else {
              await r.db.removeIntents(TxnId(id), op(n++));
            }
          }
          await r.db.flushDeferred();
          expect((await r.db.sizes()).intentsdb.intentCount).toBe(0);
          expect(await r.db.listTransactions()).toEqual([]);
          expect(await recordsLeft(r.intents)).toBe(0);
        }
        const sum = await base.db.regularChecksum();
        for (const r of reps) expect(await r.db.regularChecksum()).toEqual(sum);
        for (const r of reps) await r.db.close();
      }),
      { numRuns: 120 },
    );
  });
});
