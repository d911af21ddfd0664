/** Benchmark sections runnable by `npm run bench [section]` and `tessera bench [section]`. */
import { parseAbArgs, runAb } from './ab-bench';
import { runBigTxnSection } from './big-txn';
import { runClusterBench } from './cluster-bench';
import { runProfileSection } from './profiling';
import { runLoadSection } from './load-bench';
import { sectionArgs } from './section-args';
import { runOracleSection } from './oracle-bench';
import { runPercolatorSection } from './percolator-bench';
import { runSplitBench } from './split-bench';

export const BENCH_SECTIONS: Record<string, () => Promise<void>> = {
  cluster: runClusterBench,
  // One transaction of 100 × 1 MiB rows: intents write, commit, apply on every replica, tserver RSS.
  'big-txn': runBigTxnSection,
  // 1,000,000 rows of 100 bytes with upsertMany (--rows N for smaller runs).
  load: runLoadSection,
  // Tables from a V8 CPU profile (.cpuprofile): busy time by area, top functions by self and inclusive time.
  profile: runProfileSection,
  // Two tessera clusters (builds, tserver flags or Node.js options) side by side, paired rounds.
  // The timestamp oracle: timestamps/s and getTimestamp p50/p99 with batching (docs/percolator.md).
  oracle: runOracleSection,
  // 2-row bank transfers: Percolator beside YugabyteDB-style transactions in one run.
  percolator: runPercolatorSection,
  // Tablet splitting (docs/splitting.md): split time by tablet size, write p99 during a split, sequential-key balance.
  split: runSplitBench,
  ab: async () => {
    await runAb(parseAbArgs(sectionArgs('ab')));
  },
};
