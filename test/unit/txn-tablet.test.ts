import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Flags } from '../../common/flags';
import { DbError, ErrorCode } from '../../common/errors';
import { TxnId } from '../../common/ids';
import { TabletPeer } from '../../tserver/tablet/tablet-peer';
import { demoTabletMeta, PeerJanitor, testPeerDeps, untilLeaderReady } from './tablet-peer-harness';
import { decodeTabletOp, encodeTabletOp, type TabletOp } from '../../tserver/tablet/tablet-op';
import { HybridClock } from '../../common/hybrid-clock';
import { SystemClock } from '../../common/clock';
import type { DocKey, TxnMeta } from '../../docdb/doc-db-api';
import type { PeerTxnEnv, TxnStatusInfo } from '../../tserver/tablet/participant/txn-env';
import { TabletService, txnMetaFromPb } from '../../tserver/tablet-service';
import type { TabletManager } from '../../tserver/tablet-manager';
import { ENABLE_WAIT_QUEUES, TEST_INJECT_SLEEP_BEFORE_APPLYING_INTENTS_MS, WAIT_QUEUE_POLL_INTERVAL_MS } from '../../tserver/transaction/txn-flags';
import { APPLY_CLEANUP_DELAY_MS } from '../../docdb/docdb-flags';

const janitor = new PeerJanitor();
const { dirs, peers } = janitor;
afterEach(() => janitor.cleanup());

const key = (i: number): DocKey => ({ hash: (i * 7919) % 65536, hashed: [BigInt(i)], range: [] });

async function open(flags: Flags, env: PeerTxnEnv, dir?: string): Promise<{ p: TabletPeer; dir: string }> {
  const d = dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-txn-tablet-'));
  if (!dir) dirs.push(d);
  const p = await TabletPeer.open(testPeerDeps(d, { flags, txnEnv: env }));
  peers.push(p);
  await untilLeaderReady(p);
  return { p, dir: d };
}

/** A fake status tablet: a map of statuses; abort flips PENDING to ABORTED. */
function fakeEnv(): PeerTxnEnv & { statuses: Map<string, TxnStatusInfo>; aborts: string[]; abortParticipants: Array<string | undefined> } {
  const statuses = new Map<string, TxnStatusInfo>();
  const aborts: string[] = [];
  const abortParticipants: Array<string | undefined> = [];
  return {
    statuses,
    aborts,
    abortParticipants,
    getStatus: (id) => Promise.resolve(statuses.get(id) ?? { status: 'ABORTED', priority: 0 }),
    known: (id) => {
      const st = statuses.get(id);
      return st && st.status !== 'PENDING' ? st : undefined;
    },
    abort: (id, _statusTablet, participant) => {
      aborts.push(id);
      abortParticipants.push(participant);
      const s = statuses.get(id);
      if (s?.status === 'PENDING') statuses.set(id, { status: 'ABORTED', priority: s.priority });
      return Promise.resolve(statuses.get(id) ?? { status: 'ABORTED', priority: 0 });
    },
  };
}

/** Wait (bounded: 10 s) until cond holds; fails the test if it never does. */
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 2_000 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(cond()).toBe(true);
}
const txn = (id: string, priority: number, startHt: bigint): TxnMeta => ({ txnId: TxnId(id), statusTablet: 'st1', isolation: 'snapshot', priority, startHt });
const upsert = (i: number, v: string) => ({ kind: 'UPSERT' as const, op: { type: 'upsert' as const, key: key(i), columns: [{ columnId: 1, value: v }] } });

describe('txn tablet ops', () => {
  it('txn-tablet: WRITE_INTENTS / APPLY_TXN / APPLY_TXNS / REMOVE_TXN / TXN_STATUS round-trip through the entry codec', () => {
    const ops: TabletOp[] = [
      { type: 'WRITE_INTENTS', txn: { txnId: TxnId('abc'), statusTablet: 'st', isolation: 'serializable', priority: 0.25, startHt: 77n }, ht: 99n, ops: [{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: 'x' }] }, { type: 'delete', key: key(2) }] },
      { type: 'APPLY_TXN', txnId: TxnId('abc'), commitHt: 123n },
      { type: 'APPLY_TXNS', txns: [{ txnId: TxnId('abc'), commitHt: 123n }, { txnId: TxnId('d-2'), commitHt: 1n << 62n }] },
      { type: 'REMOVE_TXN', txnId: TxnId('abc') },
      { type: 'TXN_STATUS', txnId: TxnId('abc'), status: 'COMMITTED', ht: 5n, payload: new Uint8Array([1, 2, 3]) },
    ];
    // A serializable transaction's read locks ride in WRITE_INTENTS (with or without rows written).
    ops.push({ type: 'WRITE_INTENTS', txn: { txnId: TxnId('r'), statusTablet: 'st', isolation: 'serializable', priority: 0.5, startHt: 1n }, ht: 100n, ops: [], reads: { rows: [key(3), key(4)], tablet: false } });
    ops.push({ type: 'WRITE_INTENTS', txn: { txnId: TxnId('r'), statusTablet: 'st', isolation: 'serializable', priority: 0.5, startHt: 1n }, ht: 101n, ops: [{ type: 'delete', key: key(5) }], reads: { rows: [], tablet: true } });
    ops.push({ type: 'WRITE_INTENTS', txn: { txnId: TxnId('r'), statusTablet: 'st', isolation: 'serializable', priority: 0.5, startHt: 1n }, ht: 102n, ops: [], reads: { rows: [key(6)], tablet: false, hashKeys: [key(7), key(8)] } });
    for (const op of ops) {
      const d = decodeTabletOp(encodeTabletOp(op));
      expect(d.type === 'TXN_STATUS' ? { ...d, payload: new Uint8Array(d.payload) } : d).toEqual(op);
    }
    for (const op of [ops[1]!, ops[2]!]) {
      const bytes = encodeTabletOp(op);
      expect(() => decodeTabletOp(bytes.subarray(0, bytes.length - 1))).toThrow(DbError);
    }
    // An APPLY_TXNS of no transactions is neither written nor read.
    expect(() => encodeTabletOp({ type: 'APPLY_TXNS', txns: [] })).toThrow(DbError);
    expect(() => decodeTabletOp(new Uint8Array([8, 0]))).toThrow(/APPLY_TXNS of 0/);
  });

  it('txn-tablet: large rows are encoded into one buffer of about their size (no doubling left-overs)', () => {
    const big = 'b'.repeat(1 << 20);
    const row = (i: number, value: string | Uint8Array) => ({ type: 'upsert' as const, key: { hash: i, hashed: [BigInt(i), 'k\u00e9y'], range: [] }, columns: [{ columnId: 1, value }, { columnId: 2, value: 3.5 }], ttlMs: 1000 });
    const op: TabletOp = { type: 'WRITE_INTENTS', txn: txn('t-big', 0.5, 1n), ht: 2n, ops: [row(1, big), row(2, '\u20ac'.repeat(300_000)), row(3, new Uint8Array(1 << 20).fill(7)), { type: 'delete', key: key(4) }] };
    const bytes = encodeTabletOp(op);
    const back = decodeTabletOp(bytes) as Extract<TabletOp, { type: 'WRITE_INTENTS' }>;
    const third = back.ops[2] as { columns: Array<{ value: unknown }> };
    expect(Buffer.from(third.columns[0]!.value as Uint8Array).equals(Buffer.alloc(1 << 20, 7))).toBe(true);
    third.columns[0]!.value = (op.ops[2] as { columns: Array<{ value: unknown }> }).columns[0]!.value; // (a Buffer view comes back)
    expect(back).toEqual(op);
    expect(bytes.buffer.byteLength - bytes.byteLength).toBeLessThan(1024);
    const w: TabletOp = { type: 'WRITE', ht: 3n, ops: [row(5, big), row(6, big), row(7, big)] };
    const wb = encodeTabletOp(w);
    expect(decodeTabletOp(wb)).toEqual(w);
    expect(wb.buffer.byteLength - wb.byteLength).toBeLessThan(1024);
  });

  it('txn-tablet: intents are invisible to others until APPLY_TXN, visible to their own txn, and survive reopen', async () => {
    const flags = new Flags();
    const env = fakeEnv();
    const { p, dir } = await open(flags, env);
    const t = txn('t-a', 0.5, p.safeTime());
    env.statuses.set('t-a', { status: 'PENDING', priority: 0.5 });
    await p.writeIntents({ txn: t, readHt: p.safeTime(), ops: [upsert(1, 'a1'), upsert(2, 'a2')] });
    expect((await p.read([key(1)], {})).rows[0]).toBeUndefined();
    expect((await p.read([key(1)], { txnId: TxnId('t-a') })).rows[0]?.columns.get(1)).toBe('a1');
    expect((await p.sizes()).intentsdb.intentCount).toBeGreaterThan(0);
    await p.stop();
    peers.splice(peers.indexOf(p), 1);
    const { p: q } = await open(flags, env, dir);
    expect((await q.transactions()).map((x) => x.meta.txnId)).toEqual(['t-a']);
    const commitHt = q.nextHt();
    env.statuses.set('t-a', { status: 'COMMITTED', commitHt, priority: 0.5 });
    // Committed but not yet applied: readers resolve the intent through the status tablet.
    expect((await q.read([key(2)], {})).rows[0]?.columns.get(1)).toBe('a2');
    await q.proposeOp({ type: 'APPLY_TXN', txnId: TxnId('t-a'), commitHt });
    // The intents move off the ordered apply path; wait for that apply to finish.
    await q.applyInProgress(TxnId('t-a'));
    expect((await q.sizes()).intentsdb.intentCount).toBe(0);
    expect((await q.read([key(1)], {})).rows[0]?.columns.get(1)).toBe('a1');
  });

  it('txn-tablet: a small transaction is applied in the batch of its APPLY entry; its intent deletes wait for one RegularDB sync shared with later applies, then its apply-state delete follows; a stop writes them; apply_cleanup_delay_ms=0 syncs and deletes at once', async () => {
    const env = fakeEnv();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-txn-tablet-'));
    dirs.push(dir);
    const flags = new Flags();
    // A wait far longer than this test's steps take, even on a slow machine.
    flags.set(APPLY_CLEANUP_DELAY_MS, 2000);
    const p = await TabletPeer.open(testPeerDeps(dir, { flags, txnEnv: env }));
    peers.push(p);
    await untilLeaderReady(p);
    const applyOne = async (id: string, n: number): Promise<void> => {
      env.statuses.set(id, { status: 'PENDING', priority: 0.5 });
      await p.writeIntents({ txn: txn(id, 0.5, p.safeTime()), readHt: p.safeTime(), ops: [upsert(n, id)] });
      const commitHt = p.nextHt();
      env.statuses.set(id, { status: 'COMMITTED', commitHt, priority: 0.5 });
      await p.proposeOp({ type: 'APPLY_TXN', txnId: TxnId(id), commitHt });
      await p.applyInProgress(TxnId(id));
    };
    const counts = (): { rb: number; rsync: number; rdels: number; ib: number; idels: number } => {
      const d = p.ioCounts()!.docdb;
      return { rb: d.regulardb.batches, rsync: d.regulardb.syncedBatches, rdels: d.regulardb.dels, ib: d.intentsdb.batches, idels: d.intentsdb.dels };
    };
    const onDisk = async (): Promise<string[]> => (await p.db().listTransactions()).map((t) => t.meta.txnId);
    await applyOne('d-1', 1);
    const a = counts();
    // Applied: readable from RegularDB, gone from IntentsDB's view — while its records wait on disk.
    expect((await p.sizes()).intentsdb.intentCount).toBe(0);
    expect((await p.read([key(1)], {})).rows[0]?.columns.get(1)).toBe('d-1');
    expect(await onDisk()).toEqual(['d-1']);
    // … listed as applying (consoles; GC keeps below its commit time), not as a pending transaction.
    expect((await p.db().listTransactions())[0]?.applying?.commitHt).toBeGreaterThan(0n);
    // Time passes with nothing to write: the sleep is the scenario (a clean-up must not be written alone).
    await new Promise((r) => setTimeout(r, 100));
    expect(counts()).toEqual(a); // nothing written just for the clean-up
    await applyOne('d-2', 2);
    const b = counts();
    // d-2 is applied inside the RegularDB batch of its APPLY entry (versions + apply state): one
    // batch, not synced; no IntentsDB delete yet.
    expect([b.rb - a.rb, b.rsync - a.rsync, b.ib - a.ib - 1, b.idels]).toEqual([1, 0, 0, a.idels]);
    const end = performance.now() + 10_000;
    while (counts().rdels < b.rdels + 2 && performance.now() < end) await new Promise((r) => setTimeout(r, 20));
    const c = counts();
    // One sync, ONE IntentsDB batch deleting both transactions' records (the row's packed intent
    // each, which carries the metadata: no reverse entry, no metadata record — flag
    // txn_lone_intent_meta), then one batch with both apply-state deletes.
    expect([c.rsync - b.rsync, c.ib - b.ib, c.idels - b.idels, c.rb - b.rb, c.rdels - b.rdels]).toEqual([1, 1, 2, 2, 2]);
    expect(await onDisk()).toEqual([]);
    await applyOne('d-3', 3);
    const d = counts();
    await p.stop();
    const e = counts();
    expect([e.idels - d.idels, e.rdels - d.rdels]).toEqual([1, 1]); // the stop wrote d-3's clean-ups (1 packed intent carrying the metadata)
    peers.splice(peers.indexOf(p), 1);

    // 0: the versions are synced and the intents deleted within the apply itself.
    const dir2 = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-txn-tablet-'));
    dirs.push(dir2);
    const flags2 = new Flags();
    flags2.set(APPLY_CLEANUP_DELAY_MS, 0);
    const q = await TabletPeer.open(testPeerDeps(dir2, { flags: flags2, txnEnv: env }));
    peers.push(q);
    await untilLeaderReady(q);
    env.statuses.set('z-1', { status: 'PENDING', priority: 0.5 });
    await q.writeIntents({ txn: txn('z-1', 0.5, q.safeTime()), readHt: q.safeTime(), ops: [upsert(9, 'z-1')] });
    const z0 = q.ioCounts()!.docdb;
    const commitHt = q.nextHt();
    env.statuses.set('z-1', { status: 'COMMITTED', commitHt, priority: 0.5 });
    await q.proposeOp({ type: 'APPLY_TXN', txnId: TxnId('z-1'), commitHt });
    await q.applyInProgress(TxnId('z-1'));
    const z1 = q.ioCounts()!.docdb;
    expect([z1.regulardb.syncedBatches - z0.regulardb.syncedBatches, z1.intentsdb.dels - z0.intentsdb.dels]).toEqual([1, 1]); // 1 packed intent carrying the metadata
    expect((await q.db().listTransactions()).map((t) => t.meta.txnId)).toEqual([]);
  });

  it('txn-tablet: a conflicting writer of lower priority fails with TXN_CONFLICT; a higher one aborts the holder', async () => {
    const env = fakeEnv();
    const { p } = await open(new Flags(), env);
    env.statuses.set('low', { status: 'PENDING', priority: 0.1 });
    env.statuses.set('mid', { status: 'PENDING', priority: 0.5 });
    env.statuses.set('high', { status: 'PENDING', priority: 0.9 });
    await p.writeIntents({ txn: txn('mid', 0.5, 0n), readHt: p.safeTime(), ops: [upsert(7, 'mid')] });
    const e = await p.writeIntents({ txn: txn('low', 0.1, 0n), readHt: p.safeTime(), ops: [upsert(7, 'low')] }).catch((x: unknown) => x);
    expect((e as DbError).code).toBe(ErrorCode.TXN_CONFLICT);
    await p.writeIntents({ txn: txn('high', 0.9, 0n), readHt: p.safeTime(), ops: [upsert(7, 'high')] });
    expect(env.aborts).toEqual(['mid']);
    // The abort names this tablet, where the loser's intents are, for the coordinator to clean up.
    expect(env.abortParticipants).toEqual([p.tabletId]);
    expect(p.cleanupQueue.has(TxnId('mid'))).toBe(true);
    await p.proposeOp({ type: 'REMOVE_TXN', txnId: TxnId('mid') });
    expect((await p.transactions()).map((x) => x.meta.txnId)).toEqual(['high']);
    // First committer wins: a version committed after our read time is a conflict.
    const readHt = p.safeTime();
    await p.write({ ops: [upsert(8, 'plain')] });
    const late = await p.writeIntents({ txn: txn('late', 0.99, 0n), readHt, ops: [upsert(8, 'late')] }).catch((x: unknown) => x);
    expect((late as DbError).code).toBe(ErrorCode.TXN_CONFLICT);
  });

  it('txn-tablet: a removed (aborted) transaction writes and locks nothing more here (TXN_ABORTED at once); intents of a write that raced its removal are queued for removal again', async () => {
    const env = fakeEnv();
    const { p } = await open(new Flags(), env);
    env.statuses.set('gone', { status: 'PENDING', priority: 0.5 });
    await p.writeIntents({ txn: txn('gone', 0.5, 0n), readHt: p.safeTime(), ops: [upsert(1, 'a')] });
    await p.proposeOp({ type: 'REMOVE_TXN', txnId: TxnId('gone') });
    expect(await p.transactions()).toEqual([]);
    const again = await p.writeIntents({ txn: txn('gone', 0.5, 0n), readHt: p.safeTime(), ops: [upsert(2, 'b')] }).catch((x: unknown) => x);
    expect((again as DbError).code).toBe(ErrorCode.TXN_ABORTED);
    const read = await p.readSerializable([key(1)], { ...txn('gone', 0.5, 0n), isolation: 'serializable' }, {}).catch((x: unknown) => x);
    expect((read as DbError).code).toBe(ErrorCode.TXN_ABORTED);
    expect(await p.transactions()).toEqual([]);
    // A WRITE_INTENTS proposed before the REMOVE was applied lands after it: queued for the sweep,
    // whose REMOVE (proposed without asking the status tablet) takes the intents away again.
    expect(p.cleanupQueue.has(TxnId('gone'))).toBe(false);
    await p.proposeOp({ type: 'WRITE_INTENTS', txn: txn('gone', 0.5, 0n), ht: p.nextHt(), ops: [upsert(3, 'late').op] });
    expect((await p.transactions()).map((t) => t.meta.txnId)).toEqual(['gone']);
    expect(p.cleanupQueue.has(TxnId('gone'))).toBe(true);
    await p.proposeOp({ type: 'REMOVE_TXN', txnId: TxnId('gone') });
    expect(await p.transactions()).toEqual([]);
    expect(p.cleanupQueue.has(TxnId('gone'))).toBe(false);
    // Another transaction writes those rows freely.
    await p.writeIntents({ txn: txn('next', 0.1, 0n), readHt: p.safeTime(), ops: [upsert(1, 'n'), upsert(3, 'n')] });
  });

  it('txn-tablet: a status tablet that forgot a committed transaction (answers ABORTED) while the read or write was asking does not hide it: the replica settles the answer with its own apply', async () => {
    // The race tessera verify found: a reader/writer meets T's intents, asks T's status tablet; meanwhile
    // T's APPLY entry is applied here and the coordinator forgets T; the late answer is ABORTED.
    const env = fakeEnv();
    const { p } = await open(new Flags(), env);
    await p.writeIntents({ txn: txn('old', 0.5, 0n), readHt: p.safeTime(), ops: [upsert(11, 'old')] });
    const commitHt = p.nextHt();
    env.statuses.set('old', { status: 'PENDING', priority: 0.5 });
    await p.proposeOp({ type: 'APPLY_TXN', txnId: TxnId('old'), commitHt });
    await p.applyInProgress(TxnId('old'));
    // Row 12: intents of T written, status asked before T's apply here, answered after it.
    await p.writeIntents({ txn: txn('t', 0.5, 0n), readHt: p.safeTime(), ops: [upsert(12, 'new')] });
    const tCommit = p.nextHt();
    let asked = 0;
    const gate = { open: (): void => undefined };
    const released = new Promise<void>((r) => (gate.open = r));
    env.getStatus = async () => {
      asked++;
      await released;
      return { status: 'ABORTED', priority: 0 }; // forgotten: every participant applied it
    };
    const reading = p.read([key(12)], { readHt: tCommit + 10n, globalLimitHt: tCommit + 10n });
    const late = p.writeIntents({ txn: txn('w', 0.99, 0n), readHt: tCommit - 1n, ops: [upsert(12, 'w')] }).catch((x: unknown) => x);
    for (let i = 0; i < 200 && asked < 1; i++) await new Promise((r) => setTimeout(r, 5));
    expect(asked).toBeGreaterThan(0);
    await p.proposeOp({ type: 'APPLY_TXN', txnId: TxnId('t'), commitHt: tCommit });
    await p.applyInProgress(TxnId('t'));
    gate.open();
    // The reader sees T's row (not the absent old version), the writer that read before T's commit conflicts.
    expect((await reading).rows[0]?.columns.get(1)).toBe('new');
    expect((await late as DbError).code).toBe(ErrorCode.TXN_CONFLICT);
  });

  it('txn-tablet: TEST_inject_sleep_before_applying_intents_ms delays only the apply stage; reads keep being served', async () => {
    const flags = new Flags();
    flags.setAtRuntime(TEST_INJECT_SLEEP_BEFORE_APPLYING_INTENTS_MS.name, '400', false);
    const env = fakeEnv();
    const { p } = await open(flags, env);
    await p.writeIntents({ txn: txn('s', 0.5, 0n), readHt: p.safeTime(), ops: [upsert(3, 's')] });
    const commitHt = p.nextHt();
    env.statuses.set('s', { status: 'COMMITTED', commitHt, priority: 0.5 });
    // The APPLY_TXN entry is Raft-applied at once (the pending apply is recorded durably) ...
    await p.proposeOp({ type: 'APPLY_TXN', txnId: TxnId('s'), commitHt });
    const moving = p.applyInProgress(TxnId('s'));
    expect(moving).toBeDefined();
    // ... while the intents stay in IntentsDB for the injected sleep, and later entries still apply.
    await p.write({ ops: [upsert(4, 'w')] });
    expect((await p.sizes()).intentsdb.intentCount).toBeGreaterThan(0);
    // Reads are served meanwhile: the intent resolves as committed through the pending apply.
    env.statuses.clear();
    expect((await p.read([key(3)], {})).rows[0]?.columns.get(1)).toBe('s');
    expect((await p.read([key(4)], {})).rows[0]?.columns.get(1)).toBe('w');
    await moving;
    expect((await p.sizes()).intentsdb.intentCount).toBe(0);
    expect((await p.read([key(3)], {})).rows[0]?.columns.get(1)).toBe('s');
  });

  it('txn-tablet: a plain write never slips under a pending transaction\'s intent — it aborts that transaction (no lost update)', async () => {
    const env = fakeEnv();
    const { p } = await open(new Flags(), env);
    env.statuses.set('rmw', { status: 'PENDING', priority: 0.99 });
    // The transaction read x and wrote x+1 (its intent); a plain write of x comes in concurrently.
    await p.writeIntents({ txn: txn('rmw', 0.99, 0n), readHt: p.safeTime(), ops: [upsert(9, 'txn')] });
    await p.write({ ops: [upsert(9, 'plain')] });
    // The transaction lost (even at a high priority): it can no longer commit over the plain write.
    expect(env.aborts).toEqual(['rmw']);
    expect(env.statuses.get('rmw')?.status).toBe('ABORTED');
    expect(p.cleanupQueue.has(TxnId('rmw'))).toBe(true);
    expect((await p.read([key(9)], {})).rows[0]?.columns.get(1)).toBe('plain');
    // Column-level meets row-level: a plain delete meets a transaction's column write too.
    env.statuses.set('col', { status: 'PENDING', priority: 0.5 });
    await p.writeIntents({ txn: txn('col', 0.5, 0n), readHt: p.safeTime(), ops: [upsert(10, 'c')] });
    await p.write({ ops: [{ kind: 'DELETE', op: { type: 'delete', key: key(10) } }] });
    expect(env.aborts).toEqual(['rmw', 'col']);
  });

  it('txn-tablet: a plain write after a committed-but-unapplied transaction is stamped above its commit time, so it stays the newest version after the apply', async () => {
    const env = fakeEnv();
    const { p } = await open(new Flags(), env);
    env.statuses.set('c1', { status: 'PENDING', priority: 0.5 });
    await p.writeIntents({ txn: txn('c1', 0.5, 0n), readHt: p.safeTime(), ops: [upsert(11, 'committed')] });
    // Committed by a status tablet whose clock is far ahead of this tablet's.
    const commitHt = p.safeTime() + (5_000_000n << 12n);
    env.statuses.set('c1', { status: 'COMMITTED', commitHt, priority: 0.5 });
    const ht = await p.write({ ops: [upsert(11, 'later')] });
    expect(ht).toBeGreaterThan(commitHt);
    expect(env.aborts).toEqual([]);
    await p.proposeOp({ type: 'APPLY_TXN', txnId: TxnId('c1'), commitHt });
    await p.applyInProgress(TxnId('c1'));
    expect((await p.read([key(11)], {})).rows[0]?.columns.get(1)).toBe('later');
  });

  it('txn-tablet: a plain write whose conflicting transaction cannot be settled fails with a TXN_CONFLICT that says "retry", and writes nothing', async () => {
    const env = fakeEnv();
    env.abort = (id) => {
      env.aborts.push(id);
      return Promise.resolve({ status: 'PENDING', priority: 0.5 });
    };
    const { p } = await open(new Flags(), env);
    env.statuses.set('stuck', { status: 'PENDING', priority: 0.5 });
    await p.writeIntents({ txn: txn('stuck', 0.5, 0n), readHt: p.safeTime(), ops: [upsert(12, 'stuck')] });
    const e = (await p.write({ ops: [upsert(12, 'plain')] }).catch((x: unknown) => x)) as DbError;
    expect(e).toMatchObject({ code: ErrorCode.TXN_CONFLICT, retryable: true });
    expect((await p.read([key(12)], {})).rows[0]).toBeUndefined();
    // Keys without intents are not affected.
    await p.write({ ops: [upsert(13, 'free')] });
  });

  it('txn-tablet: the TabletService rejects writes to the transactions system table with NOT_SUPPORTED (plain and transactional), on any replica', async () => {
    const peer = { meta: { ...demoTabletMeta(), tabletId: 'st1', tableName: 'transactions' }, tabletId: 'st1' } as unknown as TabletPeer;
    const manager = { get: () => peer } as unknown as TabletManager;
    const svc = new TabletService({ manager, flags: new Flags(), clock: new HybridClock(new SystemClock()), selfUuid: 'ts1', reports: () => Promise.resolve([]) });
    const op = { type: 'UPSERT', key: { hash: 0, hashed: [], range: [] }, columns: [] };
    for (const req of [{ tabletId: 'st1', ops: [op] }, { tabletId: 'st1', ops: [op], txn: { txnId: 'a1', statusTablet: 'st1', isolation: 'snapshot', priority: 1, startHt: 5n } }]) {
      const e = await svc.write(req).catch((x: unknown) => x);
      expect(e).toMatchObject({ code: ErrorCode.NOT_SUPPORTED, details: { table: 'transactions' } });
    }
  });

  it('txn-tablet: requests inside snapshot and serializable transactions are accepted; an unknown isolation is INVALID_ARGUMENT', () => {
    const ctx = { txnId: 'a1', statusTablet: 'st1', priority: 1, startHt: 5n };
    expect(txnMetaFromPb({ ...ctx, isolation: 'serializable' }).isolation).toBe('serializable');
    expect(txnMetaFromPb({ ...ctx, isolation: 'snapshot' }).isolation).toBe('snapshot');
    expect(txnMetaFromPb(ctx).isolation).toBe('snapshot');
    expect(() => txnMetaFromPb({ ...ctx, isolation: 'chaos' })).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }));
  });
});

describe('txn tablet: serializable read locks', () => {
  const sTxn = (id: string, priority: number): TxnMeta => ({ txnId: TxnId(id), statusTablet: 'st1', isolation: 'serializable', priority, startHt: 1n });

  it('txn-tablet: a serializable read replicates read locks and reads at their time; a writer of the row then conflicts by priority; locks held are not taken again', async () => {
    const env = fakeEnv();
    const { p } = await open(new Flags(), env);
    await p.write({ ops: [upsert(1, 'v0')] });
    env.statuses.set('r', { status: 'PENDING', priority: 0.5 });
    const r = await p.readSerializable([key(1), key(2)], sTxn('r', 0.5), {});
    expect(r.rows[0]?.columns.get(1)).toBe('v0');
    expect(r.rows[1]).toBeUndefined();
    expect(r.globalLimitHt).toBeUndefined();
    expect(p.metrics.readLocks).toBe(1);
    // Two row locks (strong read intents), on every replica through the Raft entry.
    expect((await p.sizes()).intentsdb.intentCount).toBe(2);
    // Held already: the next read of those rows takes no new lock (no Raft round).
    await p.readSerializable([key(2)], sTxn('r', 0.5), {});
    expect(p.metrics.readLocks).toBe(1);
    // A snapshot writer and a serializable one of lower priority: TXN_CONFLICT.
    env.statuses.set('low', { status: 'PENDING', priority: 0.1 });
    for (const t of [txn('low', 0.1, 1n), sTxn('low', 0.1)]) {
      const e = await p.writeIntents({ txn: t, readHt: p.safeTime(), ops: [upsert(2, 'low')] }).catch((x: unknown) => x);
      expect((e as DbError).code).toBe(ErrorCode.TXN_CONFLICT);
    }
    // Another row is free; a plain write of a locked row aborts the reader (a plain write wins).
    await p.writeIntents({ txn: sTxn('low', 0.1), readHt: p.safeTime(), ops: [upsert(3, 'low')] });
    await p.write({ ops: [upsert(1, 'plain')] });
    expect(env.aborts).toEqual(['r']);
  });

  it('txn-tablet: a serializable scan locks the whole tablet: it waits for no write, meets pending writers by priority, and every later write of any row meets it', async () => {
    const env = fakeEnv();
    const { p } = await open(new Flags(), env);
    await p.write({ ops: [upsert(1, 'a'), upsert(2, 'b')] });
    env.statuses.set('w-high', { status: 'PENDING', priority: 0.9 });
    await p.writeIntents({ txn: txn('w-high', 0.9, 1n), readHt: p.safeTime(), ops: [upsert(5, 'pending')] });
    env.statuses.set('s', { status: 'PENDING', priority: 0.5 });
    const e = await p.scanSerializable(sTxn('s', 0.5), {}).catch((x: unknown) => x);
    expect((e as DbError).code).toBe(ErrorCode.TXN_CONFLICT);
    env.statuses.set('s2', { status: 'PENDING', priority: 0.95 });
    const r = await p.scanSerializable(sTxn('s2', 0.95), {});
    expect(env.aborts).toEqual(['w-high']);
    // The aborted writer's pending row is not there; the committed ones are.
    expect(r.rows.map((x) => String(x.columns.get(1))).sort()).toEqual(['a', 'b']);
    // Now every transactional write of lower priority, of any row, fails.
    env.statuses.set('w', { status: 'PENDING', priority: 0.3 });
    for (const k of [1, 7, 42]) {
      const e2 = await p.writeIntents({ txn: sTxn('w', 0.3), readHt: p.safeTime(), ops: [upsert(k, 'w')] }).catch((x: unknown) => x);
      expect((e2 as DbError).code).toBe(ErrorCode.TXN_CONFLICT);
    }
    // The scanner's next page takes no new lock; it sees its own writes.
    const locks = p.metrics.readLocks;
    await p.writeIntents({ txn: sTxn('s2', 0.95), readHt: p.safeTime(), ops: [upsert(9, 'mine')] });
    const again = await p.scanSerializable(sTxn('s2', 0.95), {});
    expect(p.metrics.readLocks).toBe(locks);
    expect(again.rows.map((x) => x.columns.get(1))).toContain('mine');
  });

  it('txn-tablet: a serializable read orders after a conflicting transaction committed at a later hybrid time (not yet applied) and sees its write', async () => {
    const env = fakeEnv();
    const { p } = await open(new Flags(), env);
    env.statuses.set('w', { status: 'PENDING', priority: 0.5 });
    await p.writeIntents({ txn: txn('w', 0.5, 1n), readHt: p.safeTime(), ops: [upsert(4, 'committed')] });
    // The status tablet's clock is ahead: the commit time lies 2 s past this tablet's clock.
    const commitHt = p.nextHt() + (2_000_000n << 12n);
    env.statuses.set('w', { status: 'COMMITTED', commitHt, priority: 0.5 });
    env.statuses.set('r', { status: 'PENDING', priority: 0.1 });
    const r = await p.readSerializable([key(4)], sTxn('r', 0.1), {});
    expect(r.readHt).toBeGreaterThan(commitHt);
    expect(r.rows[0]?.columns.get(1)).toBe('committed');
  });
});

describe('txn tablet: wait-on-conflict (enable_wait_queues)', () => {
  it('txn-tablet: a lower-ranked writer waits for the pending holder instead of failing, and goes on when the holder is removed or applied; a higher-ranked one still aborts it', async () => {
    const env = fakeEnv();
    const flags = new Flags();
    flags.set(ENABLE_WAIT_QUEUES, true);
    flags.set(WAIT_QUEUE_POLL_INTERVAL_MS, 5_000); // woken by the REMOVE/APPLY entry, not by polling
    const { p } = await open(flags, env);
    env.statuses.set('holder', { status: 'PENDING', priority: 0.9 });
    env.statuses.set('low', { status: 'PENDING', priority: 0.1 });
    await p.writeIntents({ txn: txn('holder', 0.9, 1n), readHt: p.safeTime(), ops: [upsert(1, 'holder')] });
    let done = false;
    const waiting = p.writeIntents({ txn: { ...txn('low', 0.1, 1n), isolation: 'serializable' }, readHt: p.safeTime(), ops: [upsert(1, 'low')] }).then((ht) => {
      done = true;
      return ht;
    });
    await until(() => p.waitQueue.size() === 1);
    expect(done).toBe(false);
    expect(env.aborts).toEqual([]);
    // The holder aborts: its REMOVE entry wakes the waiter, whose write then goes through.
    env.statuses.set('holder', { status: 'ABORTED', priority: 0.9 });
    await p.proposeOp({ type: 'REMOVE_TXN', txnId: TxnId('holder') });
    await waiting;
    expect(p.waitQueue.waits).toBe(1);
    expect(p.waitQueue.size()).toBe(0);

    // A committed holder: the serializable waiter orders after it once its APPLY entry is applied.
    env.statuses.set('h2', { status: 'PENDING', priority: 0.8 });
    env.statuses.set('low2', { status: 'PENDING', priority: 0.2 });
    await p.writeIntents({ txn: txn('h2', 0.8, 1n), readHt: p.safeTime(), ops: [upsert(2, 'h2')] });
    const w2 = p.writeIntents({ txn: { ...txn('low2', 0.2, 1n), isolation: 'serializable' }, readHt: p.safeTime(), ops: [upsert(2, 'low2')] });
    await until(() => p.waitQueue.size() === 1); // it waits for h2
    const commitHt = p.nextHt();
    env.statuses.set('h2', { status: 'COMMITTED', commitHt, priority: 0.8 });
    await p.proposeOp({ type: 'APPLY_TXN', txnId: TxnId('h2'), commitHt });
    expect(await w2).toBeGreaterThan(commitHt);

    // A higher-ranked writer still wounds (aborts) the pending holder; equal priority ranks by id.
    env.statuses.set('a-mid', { status: 'PENDING', priority: 0.5 });
    await p.writeIntents({ txn: txn('a-mid', 0.5, 1n), readHt: p.safeTime(), ops: [upsert(3, 'mid')] });
    env.statuses.set('z-mid', { status: 'PENDING', priority: 0.5 });
    await p.writeIntents({ txn: txn('z-mid', 0.5, 1n), readHt: p.safeTime(), ops: [upsert(3, 'z')] });
    expect(env.aborts).toEqual(['a-mid']);
  });

  it('txn-tablet: a wait ends before the caller\'s deadline with TXN_CONFLICT (nothing written); with the flag off a lower priority fails at once', async () => {
    const env = fakeEnv();
    const flags = new Flags();
    flags.set(ENABLE_WAIT_QUEUES, true);
    flags.set(WAIT_QUEUE_POLL_INTERVAL_MS, 50);
    const { p } = await open(flags, env);
    env.statuses.set('holder', { status: 'PENDING', priority: 0.9 });
    env.statuses.set('low', { status: 'PENDING', priority: 0.1 });
    await p.writeIntents({ txn: txn('holder', 0.9, 1n), readHt: p.safeTime(), ops: [upsert(1, 'holder')] });
    const e = await p.writeIntents({ txn: txn('low', 0.1, 1n), readHt: p.safeTime(), ops: [upsert(1, 'low')], deadlineMonoMs: performance.now() + 600 }).catch((x: unknown) => x);
    expect((e as DbError).code).toBe(ErrorCode.TXN_CONFLICT);
    expect((e as DbError).message).toContain("waited for pending transaction(s) holder until the request's deadline");
    expect((e as DbError).details?.otherTxnId).toBe('holder');
    expect(p.waitQueue.waits).toBeGreaterThanOrEqual(2); // polled: several short waits
    expect(p.waitQueue.size()).toBe(0); // and left the queue
    // Nothing of the waiter was written; the holder's intent stays.
    expect((await p.transactions()).map((t) => t.meta.txnId)).toEqual(['holder']);
    flags.set(ENABLE_WAIT_QUEUES, false);
    const e2 = await p.writeIntents({ txn: txn('low', 0.1, 1n), readHt: p.safeTime(), ops: [upsert(1, 'low')] }).catch((x: unknown) => x);
    expect((e2 as DbError).message).toContain('higher or equal priority');
  });

  it('txn-tablet: a write coalesced with others is not held by a wait: it answers TRY_AGAIN at once (the client sends it alone)', async () => {
    const env = fakeEnv();
    const flags = new Flags();
    flags.set(ENABLE_WAIT_QUEUES, true);
    const { p } = await open(flags, env);
    env.statuses.set('holder', { status: 'PENDING', priority: 0.9 });
    env.statuses.set('low', { status: 'PENDING', priority: 0.1 });
    await p.writeIntents({ txn: txn('holder', 0.9, 1n), readHt: p.safeTime(), ops: [upsert(1, 'holder')] });
    const e = await p.writeIntents({ txn: txn('low', 0.1, 1n), readHt: p.safeTime(), ops: [upsert(1, 'low')], coalesced: true }).catch((x: unknown) => x);
    expect((e as DbError).code).toBe(ErrorCode.TRY_AGAIN);
    expect((e as DbError).retryable).toBe(true);
    // It never entered the wait queue (no deadline was given: a wait would have lasted the write timeout),
    // and wrote nothing: only the holder has intents here.
    expect(p.waitQueue.waits).toBe(0);
    expect((await p.transactions()).map((t) => t.meta.txnId)).toEqual(['holder']);
  });

  it('txn-tablet: intents of many transactions already known aborted do not count against the bound on conflicting transactions', async () => {
    const env = fakeEnv();
    const { p } = await open(new Flags(), env);
    // 70 serializable blind writers of one row ({SW} each: they do not conflict with each other).
    for (let i = 0; i < 70; i++) {
      env.statuses.set(`blind-${i}`, { status: 'PENDING', priority: 0.5 });
      await p.writeIntents({ txn: { ...txn(`blind-${i}`, 0.5, 1n), isolation: 'serializable' }, readHt: p.safeTime(), ops: [upsert(9, `b${i}`)] });
    }
    for (let i = 0; i < 70; i++) env.statuses.set(`blind-${i}`, { status: 'ABORTED', priority: 0.5 });
    env.statuses.set('w', { status: 'PENDING', priority: 0.5 });
    // A snapshot writer ({SR,SW}) meets all 70, all known aborted: it writes.
    await p.writeIntents({ txn: txn('w', 0.5, 1n), readHt: p.safeTime(), ops: [upsert(9, 'w')] });
    expect((await p.read([key(9)], { txnId: TxnId('w') })).rows[0]?.columns.get(1)).toBe('w');
    const w = (await p.transactions()).find((t) => t.meta.txnId === 'w');
    expect(w?.intentCount).toBeGreaterThan(0);
  });
});
