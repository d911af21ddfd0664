import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { Flags } from '../../common/flags';
import { HybridClock } from '../../common/hybrid-clock';
import { SystemClock } from '../../common/clock';
import { DbError, ErrorCode } from '../../common/errors';
import { TxnId } from '../../common/ids';
import type { HybridTime } from '../../common/hybrid-time';
import { TabletPeer } from '../../tserver/tablet/tablet-peer';
import { openTestCoordinator, STATUS_TABLET_META } from './coordinator-harness';
import { untilLeaderReady } from './tablet-peer-harness';
import { TransactionCoordinator } from '../../tserver/transaction/coordinator';
import {
  TEST_DISABLE_APPLY_COMMITTED_TRANSACTIONS,
  TRANSACTION_CHECK_INTERVAL_MS,
  TRANSACTION_FORGET_DELAY_MS,
  TRANSACTION_HEARTBEAT_USEC,
  TRANSACTION_MAX_MISSED_HEARTBEAT_PERIODS,
  TRANSACTION_RESEND_APPLYING_INTERVAL_MS,
  TXN_STATUS_AT_RAFT_COMMIT,
} from '../../tserver/transaction/txn-flags';

const dirs: string[] = [];
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const meta = STATUS_TABLET_META;

interface Update {
  tablet: string;
  txnId: string;
  type: string;
  commitHt: HybridTime;
  /** The status replica's applied index when the update went out. */
  appliedAtSend: number;
}

async function openCoordinator(dir: string, flags: Flags, failUpdates: { n: number }, nowMs?: () => number): Promise<{ c: TransactionCoordinator; peer: TabletPeer; updates: Update[]; close: () => Promise<void> }> {
  const updates: Update[] = [];
  const { c, peer, close } = await openTestCoordinator(dir, {
    meta, flags, clock: new HybridClock(new SystemClock()), seed: 3, ...(nowMs ? { nowMs } : {}),
    updateParticipant: (peer) => (tablet, txnId, type, commitHt) => {
      if (failUpdates.n > 0) {
        failUpdates.n--;
        return Promise.reject(new DbError(ErrorCode.NOT_THE_LEADER, 'not yet'));
      }
      updates.push({ tablet, txnId, type, commitHt, appliedAtSend: peer.raftGroup().status().appliedIndex });
      return Promise.resolve();
    },
  });
  stops.push(close);
  return { c, peer, updates, close };
}

function testFlags(): Flags {
  const f = new Flags();
  f.setAtRuntime(TRANSACTION_CHECK_INTERVAL_MS.name, '20', true);
  f.setAtRuntime(TRANSACTION_RESEND_APPLYING_INTERVAL_MS.name, '20', true);
  return f;
}

async function until(what: string, f: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-txn-coord-'));
  dirs.push(d);
  return d;
}

describe('TransactionCoordinator', () => {
  it('txn-coordinator: commit time exceeds every read time a PENDING answer was given for; APPLY is resent until acked, then the record is forgotten (reads ABORTED)', async () => {
    const fail = { n: 3 };
    const { c, updates } = await openCoordinator(tmp(), testFlags(), fail);
    const id = TxnId('t1');
    const startHt = await c.create(id, 'snapshot', 0.5);
    expect(await c.heartbeat(id)).toBe('PENDING');
    const readerHt = startHt + (1000n << 12n); // a reader far ahead of our clock
    const [st] = await c.getStatus([id], readerHt);
    expect(st!.status).toBe('PENDING');
    const commitHt = await c.commit(id, ['p1', 'p2']);
    expect(commitHt).toBeGreaterThan(readerHt);
    expect(await c.commit(id, ['p1', 'p2'])).toBe(commitHt); // a retried commit answers the same
    expect(await c.abort(id, [])).toBe('COMMITTED');
    await until('both participants acked and the record forgotten', () => c.snapshot().length === 0);
    expect(fail.n).toBe(0);
    expect(updates.map((u) => `${u.tablet}:${u.type}:${u.commitHt === commitHt}`).sort()).toEqual(['p1:APPLY:true', 'p2:APPLY:true']);
    expect((await c.getStatus([id]))[0]!.status).toBe('ABORTED');
  });

  it('txn-coordinator: with txn_status_at_raft_commit the COMMITTED record is in force at its Raft commit — the APPLYs go out before the status leader applied the entry; off (and tablet_write_answer_at_commit off), after its apply', async () => {
    for (const atCommit of [true, false]) {
      const flags = testFlags();
      flags.set(TXN_STATUS_AT_RAFT_COMMIT, atCommit);
      const { c, peer, updates } = await openCoordinator(tmp(), flags, { n: 0 });
      const id = TxnId(`at-commit-${String(atCommit)}`);
      await c.create(id, 'snapshot', 0.5); // leader-only: no entry
      const entryIndex = peer.raftGroup().status().lastIndex + 1; // the COMMITTED entry's
      const commitHt = await c.commit(id, ['p1']);
      expect((await c.getStatus([id]))[0]).toMatchObject({ status: 'COMMITTED', commitHt });
      await until('the APPLY was sent', () => updates.length === 1);
      if (atCommit) expect(updates[0]!.appliedAtSend).toBeLessThan(entryIndex);
      else expect(updates[0]!.appliedAtSend).toBeGreaterThanOrEqual(entryIndex);
    }
  });

  it('txn-coordinator: a status query during an in-flight commit waits for it and answers COMMITTED, never PENDING (fractured-read regression)', async () => {
    const { c } = await openCoordinator(tmp(), testFlags(), { n: 0 });
    const id = TxnId('race');
    const startHt = await c.create(id, 'snapshot', 0.5);
    // The commit chooses its time, then replicates; a reader with a later read time asks meanwhile.
    const committing = c.commit(id, ['p1']);
    const asked = c.getStatus([id], startHt + (1n << 40n));
    const [commitHt, [st]] = await Promise.all([committing, asked]);
    expect(st!.status).toBe('COMMITTED');
    expect(st!.commitHt).toBe(commitHt);
  });

  it('txn-coordinator: status answers need proven leadership — without a lease a ReadIndex round, and a leader that cannot prove it answers nothing (never a stale "no record, ABORTED")', async () => {
    const { c, peer } = await openCoordinator(tmp(), testFlags(), { n: 0 });
    const id = TxnId('lease');
    await c.create(id, 'snapshot', 0.5);
    const group = peer.raftGroup();
    // No lease: the answer waits for a ReadIndex round (one voter: it succeeds).
    let readIndexRounds = 0;
    const readIndex = group.readIndex.bind(group);
    group.hasLease = () => false;
    group.readIndex = () => {
      readIndexRounds++;
      return readIndex();
    };
    expect((await c.getStatus([id]))[0]!.status).toBe('PENDING');
    expect(readIndexRounds).toBe(1);
    // A deposed leader (its ReadIndex round cannot complete: it lost its majority) must not answer,
    // least of all ABORTED for a transaction its successor may have created and committed.
    group.readIndex = () => Promise.reject(new DbError(ErrorCode.NOT_THE_LEADER, 'deposed'));
    await expect(c.getStatus([TxnId('created-at-the-new-leader')])).rejects.toMatchObject({ code: ErrorCode.NOT_THE_LEADER });
    await expect(c.getStatus([id])).rejects.toMatchObject({ code: ErrorCode.NOT_THE_LEADER });
  });

  it('txn-coordinator: after a remote bootstrap the records are rebuilt from the new RegularDB (a map missing a record answered ABORTED for a live txn)', async () => {
    // Participants never acknowledge APPLY here, so the committed record stays (is not forgotten).
    const { c } = await openCoordinator(tmp(), testFlags(), { n: 1_000_000 });
    const id = TxnId('snap');
    await c.create(id, 'snapshot', 0.5);
    const commitHt = await c.commit(id, ['p1']);
    const other = TxnId('snap-pending');
    await c.create(other, 'snapshot', 0.5);
    await c.heartbeat(other); // replicates its PENDING record
    // A replica that caught up by snapshot never applied these records' entries: its map lacks them.
    const records = (c as unknown as { records: Map<string, unknown> }).records;
    records.clear();
    expect((await c.getStatus([other]))[0]!.status).toBe('ABORTED');
    // The tablet calls this after installing a snapshot, before serving again.
    await c.reloadAfterSnapshot();
    const [a, b] = await c.getStatus([id, other]);
    expect(a).toMatchObject({ status: 'COMMITTED', commitHt });
    expect(b!.status).toBe('PENDING');
  });

  it('txn-coordinator: abort sends REMOVE; committing an aborted txn fails with TXN_ABORTED', async () => {
    const { c, updates } = await openCoordinator(tmp(), testFlags(), { n: 0 });
    const id = TxnId('t2');
    await c.create(id, 'snapshot', 0.1);
    expect(await c.abort(id, ['p9'])).toBe('ABORTED');
    const e = await c.commit(id, ['p9']).catch((x: unknown) => x);
    expect((e as DbError).code).toBe(ErrorCode.TXN_ABORTED);
    await until('REMOVE acked', () => updates.length === 1 && c.snapshot().length === 0);
    expect(updates[0]!.type).toBe('REMOVE');
  });

  it('txn-coordinator: a transaction without heartbeats is aborted after max missed periods; a heartbeating one is not', async () => {
    const flags = testFlags();
    flags.setAtRuntime(TRANSACTION_HEARTBEAT_USEC.name, '50000', true);
    flags.setAtRuntime(TRANSACTION_MAX_MISSED_HEARTBEAT_PERIODS.name, '4', true);
    const { c } = await openCoordinator(tmp(), flags, { n: 0 });
    await c.create(TxnId('silent'), 'snapshot', 0.5);
    await c.create(TxnId('alive'), 'snapshot', 0.5);
    // 'silent' stays unreplicated (expiry drops it); 'old-silent' was replicated, then went silent
    // (expiry replicates ABORTED).
    await c.create(TxnId('old-silent'), 'snapshot', 0.5);
    expect(await c.heartbeat(TxnId('old-silent'))).toBe('PENDING');
    const beat = setInterval(() => void c.heartbeat(TxnId('alive')), 10);
    try {
      await until('the silent txns to expire', async () => (await c.getStatus([TxnId('silent'), TxnId('old-silent')])).every((s) => s.status === 'ABORTED'));
      expect(await c.heartbeat(TxnId('alive'))).toBe('PENDING');
      expect(c.metrics.expired).toBeGreaterThan(0);
    } finally {
      clearInterval(beat);
    }
  });

  it('txn-coordinator: records survive a restart (rebuilt from RegularDB) and the new leader re-drives APPLY of a committed txn', async () => {
    const dir = tmp();
    const flags = testFlags();
    flags.setAtRuntime(TEST_DISABLE_APPLY_COMMITTED_TRANSACTIONS.name, 'true', false);
    const first = await openCoordinator(dir, flags, { n: 0 });
    await first.c.create(TxnId('pend'), 'serializable', 0.7);
    await first.c.heartbeat(TxnId('pend')); // replicated PENDING (an unreplicated record dies with its leader)
    await first.c.create(TxnId('done'), 'snapshot', 0.2);
    const commitHt = await first.c.commit(TxnId('done'), ['p1']);
    expect(first.updates).toHaveLength(0);
    await first.peer.gcLog(0); // the log below the databases' frontier goes: the map must come from DocDB
    await first.close();

    flags.setAtRuntime(TEST_DISABLE_APPLY_COMMITTED_TRANSACTIONS.name, 'false', false);
    const second = await openCoordinator(dir, flags, { n: 0 });
    const byId = new Map(second.c.snapshot().map((t) => [t.txnId, t]));
    expect(byId.get('pend')?.status).toBe('PENDING');
    expect(byId.get('pend')?.isolation).toBe('serializable');
    await until('APPLY re-driven after restart', () => second.updates.length === 1);
    expect(second.updates[0]).toMatchObject({ tablet: 'p1', txnId: 'done', type: 'APPLY', commitHt });
    await until('the applied record forgotten', () => !second.c.snapshot().some((t) => t.txnId === 'done'));
  });

  it('txn-coordinator: the leader\'s own stall (checks far apart) is not counted against heartbeats; silence after it is', async () => {
    const flags = testFlags(); // checks every 20 ms
    flags.setAtRuntime(TRANSACTION_HEARTBEAT_USEC.name, '100000', true);
    flags.setAtRuntime(TRANSACTION_MAX_MISSED_HEARTBEAT_PERIODS.name, '5', true); // 500 ms
    // The coordinator's clock, moved by hand; in the second phase each read of it moves it 5 ms, so
    // consecutive checks are always close in its time, however the real timer runs.
    let fake = 1_000_000;
    let stepMs = 0;
    const { c } = await openCoordinator(tmp(), flags, { n: 0 }, () => (fake += stepMs));
    await c.create(TxnId('t'), 'snapshot', 0.5);
    expect(await c.heartbeat(TxnId('t'))).toBe('PENDING');
    const checksRun = (): Promise<void> => new Promise((r) => setTimeout(r, 200)); // about 10 checks
    await checksRun();
    fake += 10_000; // the leader stalled 10 s (20 times the limit) between two checks
    await checksRun();
    expect((await c.getStatus([TxnId('t')]))[0]!.status).toBe('PENDING');
    expect(c.metrics.expired).toBe(0);
    // Time moves on with the checks, none far apart, and no heartbeat comes: it expires.
    stepMs = 5;
    await until('the silent transaction to expire', async () => (await c.getStatus([TxnId('t')]))[0]!.status === 'ABORTED', 20_000);
    expect(c.metrics.expired).toBeGreaterThan(0);
  });

  it('txn-coordinator: a new record lives on the leader only (no Raft entry) until commit, abort or its first heartbeat replicates it', async () => {
    const { c, peer } = await openCoordinator(tmp(), testFlags(), { n: 1_000_000 });
    const entries = (): number => peer.metrics.entriesApplied;
    const info = (id: string): { status: string; replicated: boolean } | undefined => c.snapshot().find((t) => t.txnId === id);
    const before = entries();
    for (const id of ['a', 'b', 'c']) await c.create(TxnId(id), 'snapshot', 0.5);
    expect(entries()).toBe(before);
    expect(info('a')).toMatchObject({ status: 'PENDING', replicated: false });
    expect((await c.getStatus([TxnId('a')]))[0]!.status).toBe('PENDING');
    // commit: one entry (COMMITTED) creates the record
    await c.commit(TxnId('a'), ['p1']);
    expect(entries()).toBe(before + 1);
    expect(info('a')).toMatchObject({ status: 'COMMITTED', replicated: true });
    // first heartbeat: PENDING replicated once; later heartbeats replicate nothing
    expect(await c.heartbeat(TxnId('b'))).toBe('PENDING');
    expect(await c.heartbeat(TxnId('b'))).toBe('PENDING');
    expect(entries()).toBe(before + 2);
    expect(info('b')).toMatchObject({ status: 'PENDING', replicated: true });
    // abort: ABORTED replicated
    expect(await c.abort(TxnId('c'), ['p2'])).toBe('ABORTED');
    expect(entries()).toBe(before + 3);
    expect(info('c')).toMatchObject({ status: 'ABORTED', replicated: true });
    expect(c.metrics.madeDurable).toBe(1);
  });

  it('txn-coordinator: aborting a leader-only record with no participants (read-only, or committed by the single-tablet fast path) drops it with no Raft entry; a replicated one still gets ABORTED', async () => {
    const { c, peer, updates } = await openCoordinator(tmp(), testFlags(), { n: 0 });
    const entries = (): number => peer.metrics.entriesApplied;
    await c.create(TxnId('ro'), 'snapshot', 0.5);
    const before = entries();
    expect(await c.abort(TxnId('ro'), [])).toBe('ABORTED');
    expect(entries()).toBe(before);
    expect(c.snapshot().find((t) => t.txnId === 'ro')).toBeUndefined();
    expect((await c.getStatus([TxnId('ro')]))[0]!.status).toBe('ABORTED');
    await expect(c.commit(TxnId('ro'), [])).rejects.toMatchObject({ code: ErrorCode.TXN_ABORTED });
    // Made durable by a heartbeat: the abort is replicated as before.
    await c.create(TxnId('hb'), 'snapshot', 0.5);
    await c.heartbeat(TxnId('hb'));
    const mid = entries();
    expect(await c.abort(TxnId('hb'), [])).toBe('ABORTED');
    expect(entries()).toBeGreaterThan(mid);
    expect(updates.length).toBe(0);
  });

  it('txn-coordinator: an unreplicated record dies with its leader\'s term — after a new term (same leader again) it reads ABORTED and its commit fails; replicated ones survive', async () => {
    const { c, peer } = await openCoordinator(tmp(), testFlags(), { n: 1_000_000 });
    await c.create(TxnId('local'), 'snapshot', 0.5);
    await c.create(TxnId('durable'), 'snapshot', 0.5);
    await c.heartbeat(TxnId('durable'));
    const term = peer.currentTerm();
    // A message of a higher term from an unknown leader: this replica steps down, and being the only
    // voter it elects itself again in a later term.
    peer.raftGroup().step({ type: 'heartbeat', from: 'ts9' as never, to: 'ts1' as never, term: term + 1, commit: 0 });
    await until('stepped down', () => !peer.isLeaderReady());
    await untilLeaderReady(peer); // the harness ticks the lone replica by hand
    expect(peer.currentTerm()).toBeGreaterThan(term + 1);
    const [local, durable] = await c.getStatus([TxnId('local'), TxnId('durable')]);
    expect(local!.status).toBe('ABORTED');
    expect(durable!.status).toBe('PENDING');
    await expect(c.commit(TxnId('local'), ['p1'])).rejects.toMatchObject({ code: ErrorCode.TXN_ABORTED });
    expect(await c.commit(TxnId('durable'), ['p1'])).toBeGreaterThan(0n);
  });

  it('txn-coordinator: a requested leadership transfer first replicates the leader-only records, and new ones at once during the hand-over', async () => {
    const { c, peer } = await openCoordinator(tmp(), testFlags(), { n: 1_000_000 });
    await c.create(TxnId('x'), 'snapshot', 0.5);
    await c.create(TxnId('y'), 'snapshot', 0.5);
    const before = peer.metrics.entriesApplied;
    // A lone voter has nobody to hand over to: the transfer itself fails after the preparation.
    await expect(peer.transferLeadership()).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
    expect(peer.metrics.entriesApplied).toBe(before + 2);
    await c.create(TxnId('z'), 'snapshot', 0.5);
    expect(peer.metrics.entriesApplied).toBe(before + 3);
    expect(c.snapshot().map((t) => [t.txnId, t.replicated]).sort()).toEqual([
      ['x', true],
      ['y', true],
      ['z', true],
    ]);
  });

  it('txn-coordinator: an unreplicated record of an earlier term is never committed, even if the leader listener missed the change', async () => {
    const { c, peer } = await openCoordinator(tmp(), testFlags(), { n: 1_000_000 });
    await c.create(TxnId('stale'), 'snapshot', 0.5);
    const term = peer.currentTerm();
    peer.currentTerm = () => term + 2; // as if two elections passed unnoticed
    await expect(c.commit(TxnId('stale'), ['p1'])).rejects.toMatchObject({ code: ErrorCode.TXN_ABORTED });
    expect(c.snapshot().some((t) => t.txnId === 'stale')).toBe(false);
  });

  it('txn-coordinator: transactions finished together are forgotten by one FORGOTTEN entry, and the records stay gone after a restart', async () => {
    const dir = tmp();
    const flags = testFlags();
    flags.setAtRuntime(TEST_DISABLE_APPLY_COMMITTED_TRANSACTIONS.name, 'true', false);
    const first = await openCoordinator(dir, flags, { n: 0 });
    const ids = Array.from({ length: 20 }, (_, i) => TxnId(`f${i}`));
    for (const id of ids) await first.c.create(id, 'snapshot', 0.5);
    for (const id of ids) await first.c.commit(id, ['p1']);
    const entriesBefore = first.peer.metrics.entriesApplied;
    // Every commit is applied (drives start) at once: the forgets queue up behind the first.
    flags.setAtRuntime(TEST_DISABLE_APPLY_COMMITTED_TRANSACTIONS.name, 'false', false);
    await until('all 20 forgotten', () => first.c.snapshot().length === 0);
    const entries = first.peer.metrics.entriesApplied - entriesBefore;
    expect(first.updates).toHaveLength(20);
    expect(entries).toBeGreaterThanOrEqual(1);
    expect(entries).toBeLessThan(20); // batched: fewer entries than transactions
    for (const st of await first.c.getStatus(ids)) expect(st.status).toBe('ABORTED'); // no record
    await first.peer.gcLog(0);
    await first.close();
    const second = await openCoordinator(dir, flags, { n: 0 });
    expect(second.c.snapshot()).toEqual([]); // the tombstones are in RegularDB too
  });

  it('txn-coordinator: transactions finishing one after another within transaction_forget_delay_ms are forgotten by one entry; they answer COMMITTED until then', async () => {
    const run = async (delayMs: number): Promise<number> => {
      const flags = testFlags();
      flags.setAtRuntime(TRANSACTION_FORGET_DELAY_MS.name, String(delayMs), true);
      const { c, peer, updates, close } = await openCoordinator(tmp(), flags, { n: 0 });
      const ids = [TxnId('s0'), TxnId('s1'), TxnId('s2')];
      const before = peer.metrics.entriesApplied;
      for (const id of ids) {
        await c.create(id, 'snapshot', 0.5);
        await c.commit(id, ['p1']);
        await until(`APPLY of ${id} acknowledged`, () => updates.some((u) => u.txnId === id));
        await new Promise((r) => setTimeout(r, 100)); // a one-at-a-time client
      }
      if (delayMs > 0) for (const st of await c.getStatus(ids)) expect(st.status).toBe('COMMITTED'); // not forgotten yet
      await until('all forgotten', () => c.snapshot().length === 0, 5000 + delayMs);
      for (const st of await c.getStatus(ids)) expect(st.status).toBe('ABORTED'); // no record
      const entries = peer.metrics.entriesApplied - before;
      await close();
      return entries - ids.length; // minus the COMMITTED entries
    };
    expect(await run(0)).toBeGreaterThanOrEqual(2); // one FORGOTTEN entry each (unless one ran long)
    expect(await run(2000)).toBe(1); // one for all three
  });
  it('txn-coordinator: with the start time, ABORTED says whether it is definite — a record lost with its leader\'s term or an ABORTED record: never committed; a forgotten commit: not definite', async () => {
    const { c, peer } = await openCoordinator(tmp(), testFlags(), { n: 0 });
    const status = async (id: string, startHt?: HybridTime): Promise<{ status: string; neverCommitted: boolean; commitHt?: HybridTime }> => {
      const [st] = await c.getStatus([TxnId(id)], undefined, startHt === undefined ? undefined : [startHt]);
      return st!.status === 'COMMITTED' ? { status: st!.status, neverCommitted: st!.neverCommitted, commitHt: st!.commitHt } : { status: st!.status, neverCommitted: st!.neverCommitted };
    };
    // Committed, applied everywhere and forgotten: without the start time "no record" (ABORTED), as a
    // reader may be told; with it (a client settling its lost commit answer), COMMITTED at its time.
    const goneStart = await c.create(TxnId('gone'), 'snapshot', 0.5);
    const goneCommit = await c.commit(TxnId('gone'), ['p1']);
    await until('gone forgotten', () => c.snapshot().length === 0);
    expect(await status('gone')).toEqual({ status: 'ABORTED', neverCommitted: false });
    expect(await status('gone', goneStart)).toEqual({ status: 'COMMITTED', neverCommitted: false, commitHt: goneCommit });
    expect(c.metrics.forgottenCommitAnswers).toBe(1);
    // A record only this leader held (its commit never reached Raft), then a new term.
    const lostStart = await c.create(TxnId('lost'), 'snapshot', 0.5);
    const term = peer.currentTerm();
    peer.raftGroup().step({ type: 'heartbeat', from: 'ts9' as never, to: 'ts1' as never, term: term + 1, commit: 0 });
    await until('stepped down', () => !peer.isLeaderReady());
    await untilLeaderReady(peer);
    expect(await status('lost', lostStart)).toEqual({ status: 'ABORTED', neverCommitted: true });
    expect(await status('lost')).toEqual({ status: 'ABORTED', neverCommitted: false }); // no start time: ambiguous
    // An ABORTED record is definite.
    const abortedStart = await c.create(TxnId('ab'), 'snapshot', 0.5);
    await c.abort(TxnId('ab'), ['p1']);
    expect(await status('ab', abortedStart)).toEqual({ status: 'ABORTED', neverCommitted: true });
    // Forgotten after its REMOVE: its history holds no COMMITTED version, so it stays definite.
    await until('ab forgotten', () => c.snapshot().length === 0);
    expect(await status('ab', abortedStart)).toEqual({ status: 'ABORTED', neverCommitted: true });
    expect(c.metrics.neverCommitted).toBe(2);
    expect(c.metrics.uncovered).toBe(0);
  });

  it('txn-coordinator: a restart keeps what the record rows\' history proves — a commit forgotten before it reads COMMITTED, a leader-only record lost with it never committed', async () => {
    const dir = tmp();
    const flags = testFlags();
    const first = await openCoordinator(dir, flags, { n: 0 });
    const goneStart = await first.c.create(TxnId('gone'), 'snapshot', 0.5);
    const goneCommit = await first.c.commit(TxnId('gone'), ['p1']);
    await until('gone forgotten', () => first.c.snapshot().length === 0);
    const lostStart = await first.c.create(TxnId('lost'), 'snapshot', 0.5); // leader-only: dies with the restart
    await first.peer.gcLog(0); // the log no longer holds the entries: only RegularDB tells
    await first.close();
    const { c } = await openCoordinator(dir, flags, { n: 0 });
    const [g, l] = await c.getStatus([TxnId('gone'), TxnId('lost')], undefined, [goneStart, lostStart]);
    expect([g!.status, g!.commitHt, g!.neverCommitted]).toEqual(['COMMITTED', goneCommit, false]);
    expect([l!.status, l!.neverCommitted]).toEqual(['ABORTED', true]);
    expect(c.historyFloorHt()).toBe(0n);
  });

  it('txn-coordinator: history GC moves the floor past the forgets it collects — their transactions read indefinite, never "never committed"; later ones stay definite; reads below the floor fail SNAPSHOT_TOO_OLD', async () => {
    const { c, peer } = await openCoordinator(tmp(), testFlags(), { n: 0 });
    const starts: HybridTime[] = [];
    for (let i = 0; i < 6; i++) {
      starts.push(await c.create(TxnId(`b${i}`), 'snapshot', 0.5));
      await c.commit(TxnId(`b${i}`), ['p1']);
      await until(`b${i} forgotten`, () => c.snapshot().length === 0);
    }
    const ids = starts.map((_, i) => TxnId(`b${i}`));
    expect((await c.getStatus(ids, undefined, starts)).map((s) => s.status)).toEqual(Array<string>(6).fill('COMMITTED'));
    // Collect everything up to now: every version of the 6 forgotten records goes.
    const cutoff = await c.create(TxnId('cut'), 'snapshot', 0.5);
    const g = await peer.db().gc(cutoff);
    expect(g.cutoffHt).toBe(cutoff);
    expect(g.versionsDropped).toBeGreaterThanOrEqual(12); // a COMMITTED version and a tombstone each
    expect(c.historyFloorHt()).toBe(cutoff);
    const st = await c.getStatus(ids, undefined, starts);
    // Every one of them committed: none may read as definitely never committed.
    expect(st.filter((s) => s.neverCommitted).map((s) => s.txnId)).toEqual([]);
    expect(st.map((s) => s.status)).toEqual(Array<string>(6).fill('ABORTED'));
    expect(c.metrics.uncovered).toBe(6);
    const probe = await c.create(TxnId('probe'), 'snapshot', 0.5);
    expect((await c.getStatus([TxnId('unknown')], undefined, [probe]))[0]!.neverCommitted).toBe(true);
    // A commit after the cutoff, forgotten: still told COMMITTED.
    const lateCommit = await c.commit(TxnId('probe'), ['p1']);
    await until('probe forgotten', () => !c.snapshot().some((t) => t.txnId === 'probe'));
    expect((await c.getStatus([TxnId('probe')], undefined, [probe]))[0]).toMatchObject({ status: 'COMMITTED', commitHt: lateCommit });
    const err = await peer
      .db()
      .getRow({ hash: 0, hashed: ['b0'], range: [] }, { readHt: cutoff - 1n, resolveStatus: () => Promise.resolve({ status: 'PENDING' }) })
      .catch((e: unknown) => e);
    expect((err as DbError).code).toBe(ErrorCode.SNAPSHOT_TOO_OLD);
  });

  it('txn-coordinator: a committed transaction is never proven "never committed", and one that started at or above the history floor is told COMMITTED at its time (random histories of commits, aborts, lost leader-only records, history GC and restarts)', async () => {
    type Step = 'commit' | 'abort' | 'lost' | 'gc' | 'restart';
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom<Step>('commit', 'commit', 'abort', 'lost', 'gc', 'restart'), { minLength: 3, maxLength: 10 }), async (steps) => {
        const dir = tmp();
        const flags = testFlags();
        let cur = await openCoordinator(dir, flags, { n: 0 });
        const txns: Array<{ id: TxnId; start: HybridTime; commitHt?: HybridTime }> = [];
        let n = 0;
        for (const step of steps) {
          const { c, peer } = cur;
          if (step === 'gc') await peer.db().gc(await c.create(TxnId(`gc${n++}`), 'snapshot', 0.5)); // cutoff: now
          else if (step === 'restart') {
            await cur.close();
            cur = await openCoordinator(dir, flags, { n: 0 });
          } else {
            const id = TxnId(`t${n++}`);
            const start = await c.create(id, 'snapshot', 0.5);
            if (step === 'commit') txns.push({ id, start, commitHt: await c.commit(id, ['p1']) });
            else if (step === 'abort') {
              await c.abort(id, ['p1']);
              txns.push({ id, start });
            } else {
              // Leader-only record, then a new term: it can never commit.
              peer.raftGroup().step({ type: 'heartbeat', from: 'ts9' as never, to: 'ts1' as never, term: peer.currentTerm() + 1, commit: 0 });
              await until('stepped down', () => !peer.isLeaderReady());
              await untilLeaderReady(peer);
              txns.push({ id, start });
            }
            await until('finished transactions forgotten', () => !cur.c.snapshot().some((t) => t.status !== 'PENDING'));
          }
          const floor = cur.c.historyFloorHt();
          const st = await cur.c.getStatus(txns.map((t) => t.id), undefined, txns.map((t) => t.start));
          txns.forEach((t, i) => {
            const a = st[i]!;
            if (t.commitHt !== undefined) {
              expect(a.neverCommitted, `${t.id} committed`).toBe(false);
              if (t.start >= floor) expect([a.status, a.commitHt]).toEqual(['COMMITTED', t.commitHt]);
            } else {
              expect(a.status).toBe('ABORTED');
              if (t.start >= floor) expect(a.neverCommitted, `${t.id} never committed`).toBe(true);
            }
          });
        }
        await cur.close();
      }),
      { numRuns: 12 },
    );
  }, 120_000);
});
