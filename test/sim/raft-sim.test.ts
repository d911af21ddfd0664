/**
 * The CI budget of the Raft simulator: many seeds, each a fault phase checked after every step and a
 * liveness phase. A failure names its seed; `SEED=n npm run sim -- --trace` replays it with events.
 */
import { describe, expect, it } from 'vitest';
import { runSeed } from './sim-cluster';

const SEEDS = 500;
const STEPS_PER_SEED = 5000;

describe('raft simulator', () => {
  it(`raft sim: ${SEEDS} seeds (3 and 5 voters) keep every safety invariant under faults and recover after healing`, () => {
    let steps = 0;
    let committed = 0;
    let elections = 0;
    let snapshots = 0;
    let confChanges = 0;
    let early = 0;
    for (let seed = 1; seed <= SEEDS; seed++) {
      // runSeed throws SimFailure naming the seed and the replay command.
      const r = runSeed({ seed, steps: STEPS_PER_SEED });
      steps += r.steps;
      committed += r.proposals.committed;
      elections += r.elections;
      snapshots += r.snapshotsSent;
      confChanges += r.confChanges;
      early += r.earlyEntries;
    }
    // The budget itself is part of the contract (issue 3): at least 1,000,000 simulated steps.
    expect(steps).toBeGreaterThanOrEqual(1_000_000);
    // A run where nothing happens proves nothing: the faults must have exercised the protocol.
    expect(committed).toBeGreaterThan(SEEDS * 10);
    expect(elections).toBeGreaterThan(SEEDS);
    expect(snapshots).toBeGreaterThan(SEEDS / 2);
    expect(confChanges).toBeGreaterThan(SEEDS / 2);
    expect(early).toBeGreaterThan(SEEDS);
  });

  it('raft sim: a seed replays exactly (same result twice)', () => {
    const a = runSeed({ seed: 4242, steps: 2000 });
    const b = runSeed({ seed: 4242, steps: 2000 });
    expect(b).toEqual(a);
  });
});
