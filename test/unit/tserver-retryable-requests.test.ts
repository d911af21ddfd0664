/**
 * Retryable requests: the table each replica keeps (replicated ids per client, trimmed below the
 * client's min_running, expired when silent), the request tag in Raft entries, and a tablet that
 * answers a resent copy of a write it did — also after a restart, from the log or from the image the
 * log GC saved — instead of doing it again.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import { TxnId } from '../../common/ids';
import { Isolation, type DocKey, type TxnMeta } from '../../docdb/doc-db-api';
import { parseRetryableImage, RetryableRequests } from '../../tserver/tablet/retryable-requests';
import { decodeTabletOp, encodeTabletOp, type TabletOp } from '../../tserver/tablet/tablet-op';
import { Flags } from '../../common/flags';
import { HybridClock } from '../../common/hybrid-clock';
import { SystemClock } from '../../common/clock';
import { partitionHash } from '../../common/partition-hash';
import { TabletService } from '../../tserver/tablet-service';
import type { TabletManager } from '../../tserver/tablet-manager';
import type { TxnStatusInfo } from '../../tserver/tablet/participant/txn-env';
import { demoTabletMeta, openTestPeer, PeerJanitor } from './tablet-peer-harness';

const janitor = new PeerJanitor();
const { dirs } = janitor;
afterEach(() => janitor.cleanup());

const key = (i: number): DocKey => ({ hash: (i * 7919) % 65536, hashed: [BigInt(i)], range: [] });
const insert = (i: number, v: string) => ({ kind: 'INSERT' as const, op: { type: 'upsert' as const, key: key(i), columns: [{ columnId: 1, value: v }] } });
const tag = (requestId: number, minRunning = requestId, clientId = 'client-a') => ({ clientId, requestId, minRunning });

describe('retryable requests', () => {
  it('retryable: the table answers replicated and running copies, trims below min_running, refuses stale copies, expires silent clients, and round-trips its image', async () => {
    let now = 1_000;
    const t = new RetryableRequests(() => now);
    expect(t.check(tag(1), 't')).toEqual({ kind: 'new' });
    let finish!: (ht: bigint) => void;
    const running = new Promise<bigint>((r) => (finish = r));
    t.start(tag(1), running);
    const copy = t.check(tag(1), 't');
    expect(copy.kind).toBe('running');
    finish(50n);
    expect(await (copy as { result: Promise<bigint> }).result).toBe(50n);
    t.replicated(tag(1), 50n);
    await Promise.resolve();
    expect(t.check(tag(1), 't')).toEqual({ kind: 'replicated', ht: 50n });
    t.replicated(tag(2, 1), 60n);
    t.replicated(tag(3, 1), 70n);
    // Request 4 says the client waits for nothing below 3: 1 and 2 are forgotten, copies of them stale.
    t.replicated(tag(4, 3), 80n);
    expect(t.stats()).toMatchObject({ clients: 1, replicated: 2, running: 0 });
    expect(() => t.check(tag(2, 2), 't')).toThrow(expect.objectContaining({ code: ErrorCode.STALE_REQUEST }) as Error);
    expect(t.check(tag(3, 3), 't')).toEqual({ kind: 'replicated', ht: 70n });
    // An entry of a request the client already gave up on is not remembered.
    t.replicated(tag(2, 1), 90n);
    expect(t.stats().replicated).toBe(2);
    // Another client's ids are its own.
    expect(t.check(tag(3, 1, 'client-b'), 't')).toEqual({ kind: 'new' });

    const img = JSON.parse(JSON.stringify(t.image())) as unknown;
    const u = new RetryableRequests(() => now);
    u.restore(parseRetryableImage(img));
    expect(u.check(tag(4, 3), 't')).toEqual({ kind: 'replicated', ht: 80n });
    expect(() => u.check(tag(1, 1), 't')).toThrow(expect.objectContaining({ code: ErrorCode.STALE_REQUEST }) as Error);
    expect(() => parseRetryableImage({ clients: [{ clientId: 'x', minRunning: 1, done: [[1, 'not a number']] }] })).toThrow(expect.objectContaining({ code: ErrorCode.CORRUPTION }) as Error);
    expect(() => parseRetryableImage([])).toThrow(expect.objectContaining({ code: ErrorCode.CORRUPTION }) as Error);

    // A busy client: what lingers below min_running between trims stays bounded.
    for (let id = 100; id < 5_100; id++) t.replicated(tag(id, id - 3, 'client-c'), BigInt(id));
    const internal = t as unknown as { clients: Map<string, { done: Map<number, bigint> }> };
    expect(internal.clients.get('client-c')!.done.size).toBeLessThanOrEqual(128);
    expect(t.image().clients.find((x) => x.clientId === 'client-c')!.done.map(([id]) => id)).toEqual([5_096, 5_097, 5_098, 5_099]);

    now += 10_000;
    t.replicated(tag(1, 1, 'client-b'), 5n);
    expect(t.expire(5_000)).toBe(2); // client-a and client-c were silent for 10 s
    expect(t.stats().clients).toBe(1);
    expect(t.check(tag(4, 3), 't')).toEqual({ kind: 'new' });
  });

  it('retryable: the request tag travels in WRITE and WRITE_INTENTS entries; entries without one decode as before', () => {
    const txn: TxnMeta = { txnId: TxnId('00000000-0000-4000-8000-000000000001'), statusTablet: 'st', isolation: Isolation.SERIALIZABLE, priority: 0.5, startHt: 9n };
    const ops: TabletOp[] = [
      { type: 'WRITE', ht: 5n, ops: [insert(1, 'a').op], request: tag(7, 3) },
      { type: 'WRITE', ht: 5n, ops: [insert(1, 'a').op] },
      { type: 'WRITE_INTENTS', txn, ht: 6n, ops: [insert(2, 'b').op], reads: { rows: [key(2)], tablet: false }, request: { clientId: 'c'.repeat(64), requestId: 2 ** 40, minRunning: 1 } },
      { type: 'WRITE_INTENTS', txn, ht: 6n, ops: [insert(2, 'b').op] },
    ];
    for (const op of ops) expect(decodeTabletOp(encodeTabletOp(op))).toEqual(op);
    // A tag before another kind of entry is corrupt, not silently dropped.
    const bad = Buffer.concat([Buffer.from(encodeTabletOp(ops[0]!)).subarray(0, 1 + 1 + 8 + 1 + 1), encodeTabletOp({ type: 'REMOVE_TXN', txnId: txn.txnId })]);
    expect(() => decodeTabletOp(bad)).toThrow(expect.objectContaining({ code: ErrorCode.CORRUPTION }) as Error);
  });

  it('retryable: a resent INSERT is answered with its first hybrid time (no ALREADY_EXISTS), copies while it runs wait for it, a new id is a new write; all of it survives restarts (log, then the GC image)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-retry-'));
    dirs.push(dir);
    let p = await openTestPeer(dir);
    // Three copies at once: one runs, two wait for it; one entry.
    const applied0 = p.metrics.entriesApplied;
    const hts = await Promise.all([0, 1, 2].map(() => p.write({ ops: [insert(1, 'one')], request: tag(1) })));
    expect(new Set(hts).size).toBe(1);
    expect(p.metrics.entriesApplied - applied0).toBe(1);
    expect(await p.write({ ops: [insert(1, 'one')], request: tag(1) })).toBe(hts[0]);
    const again = await p.write({ ops: [insert(1, 'two')], request: tag(2, 1) }).catch((e: unknown) => e);
    expect((again as DbError).code).toBe(ErrorCode.ALREADY_EXISTS);
    // A failed request is not remembered: its copy runs (and fails) again.
    expect(((await p.write({ ops: [insert(1, 'two')], request: tag(2, 1) }).catch((e: unknown) => e)) as DbError).code).toBe(ErrorCode.ALREADY_EXISTS);
    // A transactional INSERT's copy does not meet its own intent.
    const txn: TxnMeta = { txnId: TxnId('00000000-0000-4000-8000-0000000000aa'), statusTablet: 'st', isolation: Isolation.SNAPSHOT, priority: 0.5, startHt: p.nextHt() };
    const w = { txn, readHt: txn.startHt, ops: [insert(3, 'txn')], request: tag(3, 1) };
    const ih = await p.writeIntents(w);
    expect(await p.writeIntents(w)).toBe(ih);
    // Without a tag nothing is deduplicated (the old behaviour).
    expect(((await p.writeIntents({ ...w, request: undefined }).catch((e: unknown) => e)) as DbError).code).toBe(ErrorCode.ALREADY_EXISTS);
    await p.stop();

    // Restart: the databases hold everything, so nothing is replayed; the log tells the requests.
    p = await openTestPeer(dir);
    expect(await p.write({ ops: [insert(1, 'one')], request: tag(1) })).toBe(hts[0]);
    expect(await p.writeIntents(w)).toBe(ih);
    // Log GC compacts those entries away and saves the table first.
    expect(await p.gcLog(0)).toBeGreaterThan(0);
    expect(fs.existsSync(path.join(dir, 'retryable.json'))).toBe(true);
    await p.stop();
    p = await openTestPeer(dir);
    expect(p.logFirstIndex()).toBeGreaterThan(2); // the INSERT's entry (index 2) is gone from the log
    expect(await p.write({ ops: [insert(1, 'one')], request: tag(1) })).toBe(hts[0]);
    expect(await p.writeIntents(w)).toBe(ih);
    // A copy of a request the client no longer waits for is refused, not run.
    await p.write({ ops: [insert(9, 'nine')], request: tag(10, 10) });
    expect(((await p.write({ ops: [insert(4, 'late')], request: tag(4, 4) }).catch((e: unknown) => e)) as DbError).code).toBe(ErrorCode.STALE_REQUEST);
    expect((await p.read([key(4)], {})).rows[0]).toBeUndefined();
    expect(p.retryable.stats()).toMatchObject({ clients: 1, stale: 1 });
    await p.stop();
  }, 30_000);
  it('retryable: a copy of a write still running when an ALTER TABLE bumps the schema version joins it (no SCHEMA_VERSION_MISMATCH, so the client never rebuilds it as a new write)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-retry-'));
    dirs.push(dir);
    // The INSERT meets a pending transaction's intent and waits for its status: it is running.
    let release!: (s: TxnStatusInfo) => void;
    const blockerStatus = new Promise<TxnStatusInfo>((r) => (release = r));
    const p = await openTestPeer(dir, { txnEnv: { getStatus: () => blockerStatus, abort: () => blockerStatus } });
    try {
      const k = { hash: partitionHash([5n]), hashed: [5n], range: [] };
      const blocker: TxnMeta = { txnId: TxnId('00000000-0000-4000-8000-0000000000bb'), statusTablet: 'st', isolation: Isolation.SNAPSHOT, priority: 0.9, startHt: p.nextHt() };
      await p.writeIntents({ txn: blocker, readHt: blocker.startHt, ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: k, columns: [{ columnId: 1, value: 'intent' }] } }] });
      const svc = new TabletService({ manager: { get: () => p } as unknown as TabletManager, flags: new Flags(), clock: new HybridClock(new SystemClock()), selfUuid: 'ts1', reports: () => Promise.resolve([]) });
      const req = { tabletId: p.tabletId, ops: [{ type: 'INSERT', key: { hash: k.hash, hashed: [{ int64Value: 5n }], range: [] }, columns: [{ columnId: 1, value: { stringValue: 'once' } }] }], clientId: 'client-s', requestId: 3n, minRunningRequestId: 3n, schemaVersion: 0 };
      const original = svc.write(req);
      for (let i = 0; i < 200 && p.retryable.stats().running === 0; i++) await new Promise((r) => setTimeout(r, 5));
      expect(p.retryable.stats().running).toBe(1);
      // ALTER TABLE: a column added (schema version 1), applied while the INSERT still waits.
      const meta = demoTabletMeta();
      expect(await p.alterSchema({ ...meta.schema, columns: [...meta.schema.columns, { name: 'w', id: 2, type: 'int64', nullable: true }] }, 1, 'demo')).toBe(1);
      const copy = svc.write(req); // built with version 0, like the original
      // A new write with version 0 is refused as before (nothing done).
      await expect(svc.write({ ...req, requestId: 4n })).rejects.toMatchObject({ code: ErrorCode.SCHEMA_VERSION_MISMATCH });
      release({ status: 'ABORTED', priority: 0.9 });
      const [a, b] = await Promise.all([original, copy]);
      expect(b.writeHt).toBe(a.writeHt);
      expect(p.retryable.stats()).toMatchObject({ duplicates: 1 });
      expect((await p.read([k], {})).rows[0]?.columns.get(1)).toBe('once');
    } finally {
      release({ status: 'ABORTED', priority: 0.9 });
      await p.stop();
    }
  });
});
