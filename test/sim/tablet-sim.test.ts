/**
 * The tablet-level simulation campaign (tablet-sim.ts): production TabletPeers under a seeded network,
 * clock and fault schedule, with distributed transactions (tablet-sim-txn.ts) and membership changes
 * (tablet-sim-members.ts). A failure names its seed; TABLET_SIM_SEED=n runs that seed alone.
 */
import { describe, expect, it } from 'vitest';
import { runTabletSeed, type TabletSimResult } from './tablet-sim';

const ONE = process.env['TABLET_SIM_SEED'];
const SEEDS = ONE ? [Number(ONE)] : Array.from({ length: 200 }, (_, i) => i + 1);
const STEPS = 300;

describe('tablet simulator', () => {
  it(`tablet sim: ${SEEDS.length} seed(s) of 3 production replicas — writes, transactions, partitions, leadership transfers, restarts losing unsynced log tails, log compaction, remote bootstrap and membership changes: nothing acknowledged lost, nothing invented, transactions all-or-none, no intent left, replicas equal`, async () => {
    const all: TabletSimResult[] = [];
    for (const seed of SEEDS) all.push(await runTabletSeed({ seed, steps: STEPS, ...(ONE ? { trace: (l: string) => console.log(l) } : {}) }));
    const sum = (f: (r: TabletSimResult) => number): number => all.reduce((a, r) => a + f(r), 0);
    const totals = {
      seeds: all.length,
      steps: sum((r) => r.steps),
      acked: sum((r) => r.writesAcked),
      failed: sum((r) => r.writesFailed),
      partitions: sum((r) => r.partitions),
      restarts: sum((r) => r.restarts),
      transfers: sum((r) => r.transfers),
      elections: sum((r) => r.elections),
      dropped: sum((r) => r.messagesDropped),
      logGcs: sum((r) => r.logGcs),
      snapshots: sum((r) => r.snapshots),
      txns: sum((r) => r.txnsBegun),
      committed: sum((r) => r.txnsCommitted),
      aborted: sum((r) => r.txnsAborted),
      abortedByConflict: sum((r) => r.txnsAbortedByConflict),
      intentWrites: sum((r) => r.intentWrites),
      intentWritesFailed: sum((r) => r.intentWritesFailed),
      txnsAcrossFaults: sum((r) => r.txnsAcrossFaults),
      removals: sum((r) => r.removals),
      additions: sum((r) => r.additions),
      changesFailed: sum((r) => r.changesFailed),
      healTicks: sum((r) => r.healTicks),
    };
    console.log(`tablet sim: ${JSON.stringify(totals)}`);
    // The faults must have happened for the campaign to mean anything.
    expect(totals.acked).toBeGreaterThan(totals.seeds * 10);
    if (!ONE) {
      expect(totals.restarts).toBeGreaterThan(totals.seeds / 2);
      expect(totals.partitions).toBeGreaterThan(totals.seeds);
      expect(totals.transfers).toBeGreaterThan(totals.seeds / 2);
      expect(totals.elections).toBeGreaterThan(totals.seeds * 2);
      // Compacted logs sent lagging replicas to remote bootstrap.
      expect(totals.logGcs).toBeGreaterThan(totals.seeds / 2);
      expect(totals.snapshots).toBeGreaterThan(totals.seeds / 20);
      // Transactions committed and aborted (some by a conflict), many with a fault between intents and apply.
      expect(totals.committed).toBeGreaterThan(totals.seeds * 2);
      expect(totals.aborted).toBeGreaterThan(totals.seeds / 2);
      expect(totals.abortedByConflict).toBeGreaterThan(0);
      expect(totals.txnsAcrossFaults).toBeGreaterThan(totals.seeds / 2);
      // Followers replaced by fresh replicas (which remote-bootstrap).
      expect(totals.removals).toBeGreaterThan(totals.seeds / 4);
      expect(totals.additions).toBeGreaterThan(totals.seeds / 4);
    }
  }, 600_000);
});
