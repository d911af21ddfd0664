/** Benchmark sections runnable by `npm run bench [section]` and `tessera bench [section]`. */
import { runBigTxnSection } from './big-txn';
import { runClusterBench } from './cluster-bench';
import { runProfileSection } from './cpu-profile-summary';
import { runLoadSection } from './load-bench';

export const BENCH_SECTIONS: Record<string, () => Promise<void>> = {
  cluster: runClusterBench,
  // One transaction of 100 × 1 MiB rows: intents write, commit, apply on every replica, tserver RSS.
  'big-txn': runBigTxnSection,
  // 1,000,000 rows of 100 bytes with upsertMany (--rows N for smaller runs).
  load: runLoadSection,
  // Tables from a V8 CPU profile (.cpuprofile): busy time by area, top functions by self and inclusive time.
  profile: runProfileSection,
};
