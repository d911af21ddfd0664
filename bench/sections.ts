/** Benchmark sections runnable by `npm run bench [section]` and `tessera bench [section]`. */
import { runClusterBench } from './cluster-bench';

export const BENCH_SECTIONS: Record<string, () => Promise<void>> = {
  cluster: runClusterBench,
};
