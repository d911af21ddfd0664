/**
 * `npm run sim` — the Raft simulator from the command line.
 *   SEED=n npm run sim                      replay one seed (with --trace to print its fault events)
 *   npm run sim -- --seeds N --steps M      run seeds 1..N (or --from S) with M fault steps each
 *   --voters 3|5 (default: by seed parity), --election T (election timeout in ticks, default 10)
 * Exit status 1 on the first failure, printing the seed that replays it.
 */
import { runSeed, SimFailure } from './sim-cluster';

function arg(name: string): string | undefined {
  const argv = process.argv.slice(2);
  const i = argv.indexOf(`--${name}`);
  if (i >= 0) return argv[i + 1];
  const eq = argv.find((a) => a.startsWith(`--${name}=`));
  return eq?.slice(name.length + 3);
}

function intArg(name: string, dflt: number): number {
  const v = arg(name);
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) {
    console.error(`--${name}: expected a non-negative integer, got ${v}`);
    process.exit(2);
  }
  return n;
}

function main(): void {
  const steps = intArg('steps', 4000);
  const trace = process.argv.includes('--trace');
  const votersArg = arg('voters');
  const electionTicks = intArg('election', 10);
  const envSeed = process.env['SEED'];
  const seeds: number[] = [];
  if (envSeed !== undefined && envSeed !== '') seeds.push(Number(envSeed));
  else {
    const from = intArg('from', 1);
    const count = intArg('seeds', 100);
    for (let s = from; s < from + count; s++) seeds.push(s);
  }
  const t0 = process.hrtime.bigint();
  let totalSteps = 0;
  let totalTicks = 0;
  let committed = 0;
  let failed = 0;
  const totals = { elections: 0, crashes: 0, confChanges: 0, snapshotsSent: 0, sent: 0, dropped: 0 };
  for (const seed of seeds) {
    try {
      const r = runSeed({ seed, steps, trace, electionTicks, ...(votersArg !== undefined ? { voters: Number(votersArg) } : {}) });
      totalSteps += r.steps;
      totalTicks += r.ticks;
      committed += r.proposals.committed;
      failed += r.proposals.failed;
      totals.elections += r.elections;
      totals.crashes += r.crashes;
      totals.confChanges += r.confChanges;
      totals.snapshotsSent += r.snapshotsSent;
      totals.sent += r.messages.sent;
      totals.dropped += r.messages.dropped;
      if (seeds.length === 1) console.log(JSON.stringify(r));
    } catch (e) {
      if (e instanceof SimFailure) {
        console.error(process.argv.includes('--stack') ? (e.stack ?? e.message) : e.message);
        console.error(`FAILED seed=${e.seed} step=${e.step}`);
        process.exit(1);
      }
      throw e;
    }
  }
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  console.log(`sim: ${JSON.stringify(totals)}`);
  console.log(`sim: ${seeds.length} seeds, ${totalSteps} steps, ${totalTicks} ticks, ${committed} proposals committed, ${failed} definitively failed, 0 violations, ${(ms / 1000).toFixed(1)} s (${Math.round(totalSteps / (ms / 1000))} steps/s)`);
}

main();
