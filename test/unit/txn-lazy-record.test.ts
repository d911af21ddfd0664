/**
 * Transactions started without CreateTransaction (docs/transactions.md, "A status record without its
 * own round trip"): the status tablet's rules for an id it holds no record of
 * (tserver/transaction/lazy-records.ts) and the id format (common/lazy-txn-id.ts).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_CLOCK_SKEW_USEC } from '../../common/common-flags';
import { SystemClock } from '../../common/clock';
import { Flags } from '../../common/flags';
import { HybridClock } from '../../common/hybrid-clock';
import { htFrom, type HybridTime } from '../../common/hybrid-time';
import { TxnId } from '../../common/ids';
import { decodeLazyTxnId, encodeLazyTxnId, lazyRecordState } from '../../common/lazy-txn-id';
import { TransactionCoordinator } from '../../tserver/transaction/coordinator';
import { TRANSACTION_CHECK_INTERVAL_MS, TRANSACTION_FORGET_DELAY_MS, TRANSACTION_HEARTBEAT_USEC, TRANSACTION_MAX_MISSED_HEARTBEAT_PERIODS, TRANSACTION_RESEND_APPLYING_INTERVAL_MS } from '../../tserver/transaction/txn-flags';
import { openTestCoordinator, STATUS_TABLET_META } from './coordinator-harness';

const dirs: string[] = [];
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const meta = STATUS_TABLET_META;

/** Creatable for 1 s (100 ms heartbeats × 10), dead 500 ms (the clock skew) later. */
function testFlags(): Flags {
  const f = new Flags();
  f.setAtRuntime(TRANSACTION_CHECK_INTERVAL_MS.name, '20', true);
  f.setAtRuntime(TRANSACTION_RESEND_APPLYING_INTERVAL_MS.name, '20', true);
  f.setAtRuntime(TRANSACTION_FORGET_DELAY_MS.name, '0', true);
  f.setAtRuntime(TRANSACTION_HEARTBEAT_USEC.name, '100000', true);
  f.setAtRuntime(TRANSACTION_MAX_MISSED_HEARTBEAT_PERIODS.name, '10', true);
  f.setAtRuntime(MAX_CLOCK_SKEW_USEC.name, '500000', true);
  return f;
}

async function open(dir: string, flags: Flags): Promise<{ c: TransactionCoordinator; clock: HybridClock; updates: Array<{ tablet: string; txnId: string; type: string }>; close: () => Promise<void> }> {
  const clock = new HybridClock(new SystemClock());
  const updates: Array<{ tablet: string; txnId: string; type: string }> = [];
  const { c, close } = await openTestCoordinator(dir, {
    meta, flags, clock, seed: 5,
    updateParticipant: () => (tablet, txnId, type) => {
      updates.push({ tablet, txnId, type });
      return Promise.resolve();
    },
  });
  stops.push(close);
  return { c, clock, updates, close };
}

function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-txn-lazy-'));
  dirs.push(d);
  return d;
}

async function until(what: string, f: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

let seq = 0;
/** A lazily started transaction's id, started at the coordinator's clock now (or `ageMs` earlier). */
function lazyId(clock: HybridClock, priority: number, ageMs = 0): { id: TxnId; startHt: HybridTime } {
  const startHt = clock.now() - (BigInt(ageMs * 1000) << 12n);
  return { id: TxnId(encodeLazyTxnId({ startHt, priority, isolation: 'snapshot' }, (seq++).toString(16).padStart(16, '0'))), startHt };
}

const code = async (p: Promise<unknown>): Promise<string> => p.then(() => 'ok', (e: { code?: string }) => e.code ?? 'no code');

describe('lazily started transactions', () => {
  it('txn-lazy-record: the id carries start time, priority and isolation; CreateTransaction ids are not read as lazy; the age decides creatable / young / dead', () => {
    const startHt = htFrom(1_700_000_000_000_000, 7);
    const id = encodeLazyTxnId({ startHt, priority: 0.3125, isolation: 'serializable' }, '0123456789abcdef');
    expect(id).toMatch(/^[0-9A-Za-z]{50}$/);
    expect(decodeLazyTxnId(id)).toEqual({ startHt, priority: 0.3125, isolation: 'serializable' });
    expect(decodeLazyTxnId('0123456789abcdef0123456789abcdef')).toBeUndefined();
    expect(decodeLazyTxnId(`${id}0`)).toBeUndefined();
    const at = (ageMs: number): string => lazyRecordState(startHt, 1_700_000_000_000_000 + ageMs * 1000, 5000, 500);
    expect([at(-100_000), at(0), at(5000), at(5001), at(5500), at(5501)]).toEqual(['creatable', 'creatable', 'creatable', 'young', 'young', 'dead']);
  });

  it('txn-lazy-record: a reader meeting a transaction without a record is told PENDING with its priority; the first commit creates the record above the reader\'s read time; a resend does not create', async () => {
    const { c, clock, updates } = await open(tmp(), testFlags());
    const { id } = lazyId(clock, 0.75);
    const readerHt = clock.now() + (1000n << 12n); // a reader far ahead of our clock
    const [st] = await c.getStatus([id], readerHt);
    expect(st).toMatchObject({ status: 'PENDING', priority: 0.75 });
    expect(c.snapshot()).toHaveLength(0); // a reader's question writes nothing
    const commitHt = await c.commit(id, ['p1'], undefined, true);
    expect(commitHt).toBeGreaterThan(readerHt);
    expect(await c.commit(id, ['p1'])).toBe(commitHt); // a retried commit answers the same
    expect(updates).toContainEqual({ tablet: 'p1', txnId: id, type: 'APPLY' });
    // Without createIfMissing (a resend after a PENDING answer) an unknown id is not created.
    const other = lazyId(clock, 0.5).id;
    expect(await code(c.commit(other, ['p1']))).toBe('TXN_ABORTED');
  });

  it('txn-lazy-record: a conflicting transaction aborting one without a record writes an ABORTED record first — its later commit and heartbeat fail, also after a restart, and the record is forgotten only once the id is dead', async () => {
    const dir = tmp();
    const flags = testFlags();
    const first = await open(dir, flags);
    const { id } = lazyId(first.clock, 0.1);
    expect(await first.c.abort(id, ['p1'])).toBe('ABORTED');
    expect(first.c.snapshot().map((r) => [r.txnId, r.status])).toEqual([[id, 'ABORTED']]);
    expect(await code(first.c.commit(id, ['p1'], undefined, true))).toBe('TXN_ABORTED');
    expect(await first.c.heartbeat(id, true)).toBe('ABORTED');
    await first.close();
    const second = await open(dir, flags);
    expect(await code(second.c.commit(id, ['p1'], undefined, true))).toBe('TXN_ABORTED');
    expect(first.updates).toContainEqual({ tablet: 'p1', txnId: id, type: 'REMOVE' });
    await until('the ABORTED record forgotten once the id is dead', () => second.c.snapshot().length === 0, 10_000);
    expect(lazyRecordState(decodeLazyTxnId(id)!.startHt, second.clock.wallMicros(), 1000, 500)).toBe('dead');
    expect(await code(second.c.commit(id, ['p1'], undefined, true))).toBe('TXN_ABORTED');
  });

  it('txn-lazy-record: a client settling a lost commit answer before its commit arrived is told a definite ABORTED, and that commit then fails', async () => {
    const { c, clock } = await open(tmp(), testFlags());
    const { id, startHt } = lazyId(clock, 0.5);
    const [st] = await c.getStatus([id], undefined, [startHt]);
    expect(st).toMatchObject({ status: 'ABORTED', neverCommitted: true });
    expect(await code(c.commit(id, ['p1'], undefined, true))).toBe('TXN_ABORTED');
  });

  it('txn-lazy-record: a dead id without a record reads ABORTED and cannot be created; a young one cannot be created either, but reads PENDING', async () => {
    const { c, clock } = await open(tmp(), testFlags());
    const dead = lazyId(clock, 0.9, 3000).id;
    expect((await c.getStatus([dead]))[0]).toMatchObject({ status: 'ABORTED' });
    expect(await code(c.commit(dead, ['p1'], undefined, true))).toBe('TXN_ABORTED');
    expect(await c.heartbeat(dead, true)).toBe('ABORTED');
    const young = lazyId(clock, 0.9, 1250).id;
    expect((await c.getStatus([young]))[0]).toMatchObject({ status: 'PENDING', priority: 0.9 });
    expect(await code(c.commit(young, ['p1'], undefined, true))).toBe('TXN_ABORTED');
    expect(c.snapshot()).toHaveLength(0);
  });

  it('txn-lazy-record: the first heartbeat creates a replicated PENDING record; a commit applied everywhere and forgotten is told COMMITTED by status and abort, never overwritten', async () => {
    const { c, clock } = await open(tmp(), testFlags());
    const { id, startHt } = lazyId(clock, 0.5);
    expect(await c.heartbeat(id, true)).toBe('PENDING');
    expect(c.snapshot()).toMatchObject([{ txnId: id, status: 'PENDING', replicated: true, startHt }]);
    const commitHt = await c.commit(id, ['p1']);
    await until('forgotten', () => c.snapshot().length === 0);
    expect((await c.getStatus([id]))[0]).toMatchObject({ status: 'COMMITTED', commitHt });
    expect(await c.abort(id, ['p2'])).toBe('COMMITTED');
    expect((await c.getStatus([id], undefined, [startHt]))[0]).toMatchObject({ status: 'COMMITTED', commitHt });
    // A heartbeat still in flight after the forget finds the commit in the history and creates nothing.
    expect(await c.heartbeat(id, true)).toBe('COMMITTED');
    expect(c.snapshot()).toHaveLength(0);
  });
});
