import { defineConfig } from 'vitest/config';

/**
 * Test files run in parallel: vitest's default on a 2-core machine is one worker (files one at a
 * time), yet most integration files spend their time waiting on server processes, so a few at once
 * shorten the suite. They can share a machine because each integration file has its own loopback
 * range (ProcCluster's hostBase, the lab's --host_base, the bench's host bases: no two files share an
 * address, and no two share a fixed port or directory; test/unit/test-address-ranges.test.ts keeps
 * it so). TESSERA_TEST_WORKERS sets another count (1 runs the files one at a time, as before).
 *
 * A few files need the machine to themselves: their checks count work done in a bounded time (the
 * Docker tests start containers). They run after the rest, one at a time ("alone").
 *
 * The long Jepsen-style campaigns (test/integration/verify*.test.ts: ten workloads under nemeses and
 * a 50-cycle crash loop, ~9 minutes on 2 cores) are not part of `npm test`, which must stay short;
 * they are `npm run test:campaigns` (the "campaigns" project, one file at a time, also alone), which
 * CI runs after `npm test` (.ci/run). Any campaign is also `tessera verify` (docs/verify.md).
 */
const workers = Number(process.env.TESSERA_TEST_WORKERS ?? 3);
const maxWorkers = Number.isInteger(workers) && workers > 0 ? workers : 3;
const CAMPAIGNS = ['test/integration/verify.test.ts', 'test/integration/verify-crash.test.ts'];
const ALONE = ['test/docker/**/*.test.ts'];
const withCampaigns = process.env.TESSERA_CAMPAIGNS === '1';

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    reporters: ['default'],
    projects: withCampaigns
      ? [{ extends: true, test: { name: 'campaigns', include: CAMPAIGNS, fileParallelism: false } }]
      : [
          {
            extends: true,
            test: { name: 'parallel', include: ['test/**/*.test.ts'], exclude: [...ALONE, ...CAMPAIGNS], fileParallelism: maxWorkers > 1, maxWorkers, sequence: { groupOrder: 0 } },
          },
          {
            extends: true,
            test: { name: 'alone', include: ALONE, fileParallelism: false, sequence: { groupOrder: 1 } },
          },
        ],
  },
});
