/**
 * `npm run bench [section] [-- options]`: benchmarks by section (bench/sections.ts). "cluster"
 * (default) runs a local RF 3 cluster; "big-txn" one 100 × 1 MiB transaction; "load" 1,000,000 rows
 * with upsertMany. The component benchmarks have their own scripts (bench:rpc, bench:raft, bench:docdb).
 */
import { BENCH_SECTIONS as SECTIONS } from './sections';
import { runVs, vsTarget } from './vs';
import { DbError } from '../common/errors';

async function main(): Promise<void> {
  // `npm run bench -- --vs etcd [--seconds N --warmup N --rounds N --workloads a,b]`: side by side with etcd;
  // `--vs postgres [--scale N --clients a,b --seconds N --rounds N --no-blog]`: pgbench against PostgreSQL.
  if (vsTarget(process.argv.slice(2)) !== undefined) {
    await runVs(process.argv.slice(2));
    return;
  }
  const name = process.argv[2] ?? 'cluster';
  const run = SECTIONS[name];
  if (!run) {
    process.stderr.write(`unknown bench section '${name}' (one of: ${Object.keys(SECTIONS).join(', ')}; component benches: npm run bench:rpc | bench:raft | bench:docdb)\n`);
    process.exit(2);
  }
  await run();
}

main().catch((e: unknown) => {
  process.stderr.write(`bench failed: ${e instanceof DbError ? `${e.code}: ` : ''}${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
