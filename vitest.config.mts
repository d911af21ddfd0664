import { defineConfig } from 'vitest/config';

/**
 * Test files run in parallel: vitest's default on a 2-core machine is one worker (files one at a
 * time), yet most integration files spend their time waiting on server processes, so a few at once
 * shorten the suite. They can share a machine because each integration file has its own loopback
 * range (ProcCluster's hostBase, the lab's --host_base, the bench's host bases: no two files share an
 * address, and no two share a fixed port or directory). TESSERA_TEST_WORKERS sets another count
 * (1 runs the files one at a time, as before).
 */
const workers = Number(process.env.TESSERA_TEST_WORKERS ?? 3);

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: workers > 1,
    maxWorkers: Number.isInteger(workers) && workers > 0 ? workers : 3,
    reporters: ['default'],
  },
});
