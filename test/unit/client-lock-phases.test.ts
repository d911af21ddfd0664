/**
 * Lock phases (client/lock-phases.ts): a client's coalesced lockRow requests, renew/unlock requests
 * and writes carrying row locks of one table are held while requests of another phase are in flight,
 * so lock holders move in step and their writes share one request (one Raft entry) per tablet.
 * Against a scripted tablet invoker whose answers come after a number of event-loop turns.
 */
import { describe, expect, it } from 'vitest';
import type { LockRowRequestPB, MutateRowsRequestPB, MutateRowsResponsePB, RowLockRequestPB, RowLockResponsePB } from '../../rpc/row-methods';
import { Deadline } from '../../client/retry-policy';
import type { TabletInvoker } from '../../client/tablet-invoker';
import { RequestIds } from '../../client/request-ids';
import { LockPhases } from '../../client/lock-phases';
import { RowOpsCoalescer, type RowCallAnswer } from '../../client/row-ops-coalescer';
import { RowLockCoalescer } from '../../client/row-lock-coalescer';

type Req = MutateRowsRequestPB | LockRowRequestPB | RowLockRequestPB;

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

/** An invoker answering every request after `turns(method)` event-loop turns (or when its gate opens). */
function scripted(turns: (method: string) => number | 'gate'): { invoker: TabletInvoker; sent: Array<{ method: string; calls: number }>; gates: Array<() => void> } {
  const sent: Array<{ method: string; calls: number }> = [];
  const gates: Array<() => void> = [];
  const invoker = {
    propagatedHt: 7n,
    observeHt: () => undefined,
    requests: new RequestIds(),
    call: async (_table: string, _where: unknown, m: { method: string }, makeReq: (t: { tabletId: string }) => Req) => {
      const req = makeReq({ tabletId: 'T' });
      const n = 1 + (req.more?.length ?? 0);
      sent.push({ method: m.method, calls: n });
      const wait = turns(m.method);
      if (wait === 'gate') await new Promise<void>((r) => gates.push(r));
      else for (let i = 0; i < wait; i++) await turn();
      if (m.method === 'MutateRows') return n === 1 ? { applied: true, writeHt: 3n, results: [] } : ({ propagatedHt: 9n, items: Array.from({ length: n }, () => ({ applied: true, writeHt: 3n, results: [] })) } satisfies MutateRowsResponsePB);
      const one = { lockId: 'L', token: 1n, expiresHt: 5n, leaseMs: 1000 };
      return n === 1 ? { ...one, propagatedHt: 9n } : ({ propagatedHt: 9n, items: Array.from({ length: n }, () => one) } satisfies RowLockResponsePB);
    },
  } as unknown as TabletInvoker;
  return { invoker, sent, gates };
}

const route = { hash: 1, key: new Uint8Array() } as never;
const key = {} as never; // the coalescers pass keys through untouched
const lockedRow = (k: number) => [{ key: { hashComponents: [{ int64: BigInt(k) }] }, mutations: [{ type: 'INCREMENT', columnId: 1, by: 1n }], lockId: `id${k}`, lockToken: 1n }] as never;
const plainRow = (k: number) => [{ key: { hashComponents: [{ int64: BigInt(k) }] }, mutations: [{ type: 'INCREMENT', columnId: 1, by: 1n }] }] as never;
const none = (): Promise<RowCallAnswer> => Promise.reject(new Error('not expected'));
const noLockAlone = (): Promise<RowLockResponsePB> => Promise.reject(new Error('not expected'));
const noSet: ReadonlySet<string> = new Set();

function coalescers(invoker: TabletInvoker, phased: boolean): { rows: RowOpsCoalescer; locks: RowLockCoalescer } {
  const rows = new RowOpsCoalescer(invoker, noSet, noSet);
  const locks = new RowLockCoalescer(invoker, 't');
  if (phased) {
    const phases = new LockPhases();
    rows.usePhases(phases);
    locks.usePhases(phases);
  }
  return { rows, locks };
}

describe('LockPhases', () => {
  it('lock phases: a write carrying a lock waits for a lockRow request in flight (another tablet\'s too), a write without one does not; the lockRow then waits for that write, an unlock for the lockRow', async () => {
    const { invoker, sent, gates } = scripted(() => 'gate');
    const { rows, locks } = coalescers(invoker, true);
    const d = new Deadline(1000);
    const lock = locks.lock('B', route, 0, { key, leaseMs: 1000, holder: 'h', lockId: 'id0' }, d, noLockAlone);
    await turn();
    const locked = rows.call('t', 'A', route, 0, lockedRow(1), d, none);
    const plain = rows.call('t', 'A', route, 0, plainRow(2), d, none);
    await turn();
    // The plain write went at its turn's end; the lock holder's write waits for the lockRow.
    expect(sent).toEqual([
      { method: 'LockRow', calls: 1 },
      { method: 'MutateRows', calls: 1 },
    ]);
    gates.shift()!(); // the lockRow is answered
    expect((await lock).lockId).toBe('L');
    await turn();
    expect(sent.length).toBe(2); // A's plain write is still in flight (one request per tablet)
    gates.shift()!();
    expect((await plain).applied).toBe(true);
    await turn();
    expect(sent.map((s) => s.method)).toEqual(['LockRow', 'MutateRows', 'MutateRows']);
    // The locked write is in flight: a lockRow and an unlock wait for it.
    const lock2 = locks.lock('C', route, 0, { key, leaseMs: 1000, holder: 'h', lockId: 'id3' }, d, noLockAlone);
    await turn();
    expect(sent.length).toBe(3);
    gates.shift()!();
    expect((await locked).applied).toBe(true);
    await turn();
    expect(sent.map((s) => s.method)).toEqual(['LockRow', 'MutateRows', 'MutateRows', 'LockRow']);
    const unlock = locks.held('C', route, 0, { key, lockId: 'id3', action: 'UNLOCK', leaseMs: 0 }, d, noLockAlone);
    await turn();
    expect(sent.length).toBe(4); // the unlock waits for the lockRow in flight
    gates.shift()!();
    await lock2;
    await turn();
    expect(sent.map((s) => s.method)).toEqual(['LockRow', 'MutateRows', 'MutateRows', 'LockRow', 'RowLock']);
    gates.shift()!();
    expect((await unlock).lockId).toBe('L');
  });

  it('lock phases: 12 callers of lock + write + unlock cycles over 3 tablets, started out of step, fall into step — one write request per tablet a round, about a third of the requests without phases', async () => {
    const cycles = 12;
    const run = async (phased: boolean): Promise<{ requests: number; writes: number }> => {
      // A write's Raft round is longer than a lock call's round trip.
      const { invoker, sent } = scripted((m) => (m === 'MutateRows' ? 5 : 1));
      const { rows, locks } = coalescers(invoker, phased);
      const d = new Deadline(60_000);
      await Promise.all(
        Array.from({ length: 12 }, async (_, w) => {
          for (let t = 0; t < w; t++) await turn(); // out of step at the start
          for (let i = 0; i < cycles; i++) {
            const tablet = 'ABC'[(w * 7 + i * 5) % 3]!;
            const k = w * 1000 + i;
            await locks.lock(tablet, route, 0, { key, leaseMs: 1000, holder: 'h', lockId: `id${k}` }, d, noLockAlone);
            await rows.call('t', tablet, route, 0, lockedRow(k), d, none);
            await locks.held(tablet, route, 0, { key, lockId: `id${k}`, action: 'UNLOCK', leaseMs: 0 }, d, noLockAlone);
          }
        }),
      );
      expect(sent.filter((s) => s.method === 'MutateRows').reduce((n, s) => n + s.calls, 0)).toBe(12 * cycles);
      return { requests: sent.length, writes: sent.filter((s) => s.method === 'MutateRows').length };
    };
    const phased = await run(true);
    const unphased = await run(false);
    // In step: each round is one request per tablet and phase, 3 × 3 for 12 cycles (the first rounds fall into step).
    expect(phased.writes).toBeLessThanOrEqual(3 * cycles + 6);
    expect(phased.requests).toBeLessThanOrEqual(9 * cycles + 18);
    expect(unphased.writes).toBeGreaterThan(phased.writes * 1.3);
  });
});
