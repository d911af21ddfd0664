/**
 * replica-divergence: silent corruption of one replica, found and repaired. Raft makes every replica
 * apply the same log, but a replica's own storage or state machine can still go wrong without any
 * client noticing: reads go to leaders, and a follower serves none. Here one follower of one tablet
 * writes a single wrong value (TEST_corrupt_tablet_replica); clients keep reading right values; the
 * replica convergence check (`tessera admin check_replicas`, the check `tessera verify` ends with)
 * names that tablet and that follower; failing the replica (TEST_fail_tablet_replica) makes the master
 * re-create it from a healthy replica (remote bootstrap), after which all replicas agree again. Then a
 * follower stores a wrong provisional record of a transaction left open: the check names it by the
 * replicas' intents digests before anything commits, and aborting the transaction removes it.
 */
import { waitUntil } from '../wait-until';
import { checkReplicaConvergence, convergenceLine, type ConvergenceReport } from '../verify/replica-convergence';
import type { Check, ExperimentOptions, ExperimentResult } from './experiment';
import { EXPERIMENT_TABLE, openExperimentLab } from './experiment-lab';

const ROWS = 300;
/** Rows written after the corruption flag is set: some land on the tablet, so its next write is corrupted. */
const MORE_ROWS = 30;
const CHECK_TIMEOUT_MS = 60_000;
const REPAIR_TIMEOUT_MS = 90_000;

interface TabletRow {
  tabletId: string;
  state: string;
}

// Long by design (docs/conventions.md): an experiment is a script read top to bottom, its steps the sections of its report; cutting it into functions would hide the order the report follows.
export async function replicaDivergence(o: ExperimentOptions): Promise<ExperimentResult> {
  const lab = await openExperimentLab(o, 'replica-divergence');
  const checks: Check[] = [];
  const figures: Record<string, number | string> = {};
  try {
    const tservers = lab.driver.addresses().map((n) => ({ name: n.name, webUrl: n.tserver.webUrl }));
    const check = (): Promise<ConvergenceReport> => checkReplicaConvergence({ tservers, replicationFactor: 3, timeoutMs: CHECK_TIMEOUT_MS });
    const table = lab.client.table(EXPERIMENT_TABLE);
    const expected = new Map<bigint, string>();
    const write = async (from: number, n: number, tag: string): Promise<void> => {
      const rows = Array.from({ length: n }, (_, i) => ({ id: BigInt(from + i), v: `${tag} ${from + i}` }));
      await table.upsertMany(rows, { timeoutMs: 30_000 });
      for (const r of rows) expected.set(r.id, r.v);
    };
    await write(0, ROWS, 'row');
    lab.log(`${ROWS} rows written`);
    const before = await check();
    lab.log(convergenceLine(before));
    checks.push({ name: 'after the writes every replica of every tablet shows the same rows', ok: before.diverged.length === 0 && before.unsettled.length === 0 && before.converged === before.tablets && before.rows >= ROWS, detail: convergenceLine(before) });

    // One follower of one tablet writes one wrong value in its own RegularDB. The master's leader
    // balancing is off meanwhile: it would move leaderships, maybe onto the corrupted replica (whose
    // reads would then be wrong, which is what the check is there to catch before it happens).
    // A follower of the first tablet, with the balancer off and the leaders holding still.
    const pickFollower = async (): Promise<{ tabletId: string; leader: string; victim: string }> => {
      await lab.driver.setFlag('n0', 'enable_load_balancing', 'false', false, 'master');
      // A transfer the balancer began before may still end: wait until the leaders hold still.
      const leaderOf = async (): Promise<string> => JSON.stringify((await lab.leaders()).map(([id, l]) => [id, l.node]));
      let seen = await leaderOf();
      await waitUntil(
        async () => {
          await new Promise((r) => setTimeout(r, 500));
          const now = await leaderOf();
          const still = now === seen;
          seen = now;
          return still;
        },
        { timeoutMs: 20_000, intervalMs: 0, what: 'tablet leaders to hold still with the balancer off' },
      );
      const [tabletId, { node: leader }] = (await lab.leaders())[0]!;
      return { tabletId, leader, victim: tservers.map((t) => t.name).find((n) => n !== leader)! };
    };
    /** Run `writeSome` until `victim` applied a write of the tablet (the corruption flag clears itself then). */
    const untilCorrupted = (victim: string, tabletId: string, writeSome: () => Promise<void>): Promise<unknown> =>
      waitUntil(
        async () => {
          await writeSome();
          const varz = (await lab.driver.consoleJson(victim, 'tserver', '/api/v1/varz', 5_000)) as { flags: Array<{ name: string; value: unknown }> };
          return varz.flags.find((f) => f.name === 'TEST_corrupt_tablet_replica')?.value === '' ? true : undefined;
        },
        { timeoutMs: 30_000, what: `${victim} to apply a write of tablet ${tabletId} (the flag clears itself once it wrote the wrong value)` },
      );
    const { tabletId, leader, victim } = await pickFollower();
    await lab.driver.setFlag(victim, 'TEST_corrupt_tablet_replica', tabletId, false, 'tserver');
    lab.log(`${victim} (a follower of tablet ${tabletId}, led by ${leader}) set to write one wrong value: TEST_corrupt_tablet_replica=${tabletId}`);
    let next = ROWS;
    await untilCorrupted(victim, tabletId, async () => {
      await write(next, MORE_ROWS, 'more');
      next += MORE_ROWS;
    });
    lab.log(`${victim} wrote the wrong value (its flag cleared itself); ${expected.size} rows written in all`);
    const read = await table.scan({ timeoutMs: 30_000 });
    const wrongReads = read.filter((r) => expected.get(r['id'] as bigint) !== r['v']).length;
    const leaderNow = (await lab.leaders()).find(([id]) => id === tabletId)?.[1].node;
    checks.push({ name: 'clients notice nothing: every row reads right (reads go to the leaders)', ok: read.length === expected.size && wrongReads === 0, detail: `${read.length} rows read, ${wrongReads} different from what was written; tablet ${tabletId} led by ${leaderNow ?? '?'}` });

    const found = await check();
    lab.log(convergenceLine(found));
    const named = found.diverged.map((t) => t.tabletId);
    checks.push({
      name: 'the convergence check names exactly that tablet, and the follower that differs',
      ok: named.length === 1 && named[0] === tabletId && found.diverged[0]?.differing?.join() === victim && found.converged === found.tablets - 1,
      detail: found.diverged.length ? found.diverged.map((t) => `${t.tabletId}: ${t.why}`).join(' | ') : convergenceLine(found),
    });

    // Repair: fail the bad replica; the master re-creates it in place from a healthy one.
    await lab.driver.setFlag('n0', 'enable_load_balancing', 'true', false, 'master');
    const t0 = lab.now();
    await lab.driver.setFlag(victim, 'TEST_fail_tablet_replica', tabletId, false, 'tserver');
    const replicaState = async (): Promise<string | undefined> => {
      const body = (await lab.driver.consoleJson(victim, 'tserver', '/api/v1/tablets', 5_000).catch(() => undefined)) as { tablets?: TabletRow[] } | undefined;
      return body?.tablets?.find((t) => t.tabletId === tabletId)?.state;
    };
    await waitUntil(
      async () => {
        await write(next, MORE_ROWS, 'repair');
        next += MORE_ROWS;
        return (await replicaState()) === 'FAILED' ? true : undefined;
      },
      { timeoutMs: 30_000, what: `${victim}'s replica of ${tabletId} to fail (TEST_fail_tablet_replica)` },
    );
    await lab.driver.setFlag(victim, 'TEST_fail_tablet_replica', '', false, 'tserver');
    lab.log(`${victim}'s replica of ${tabletId} FAILED; the master re-creates it from a healthy replica`);
    await waitUntil(async () => ((await replicaState()) === 'RUNNING' ? true : undefined), { timeoutMs: REPAIR_TIMEOUT_MS, what: `${victim}'s replica of ${tabletId} to run again` });
    const after = await check();
    const repairMs = Math.round(lab.now() - t0);
    lab.log(`${convergenceLine(after)}; repaired ${repairMs} ms after the replica was failed`);
    checks.push({ name: 'after the re-created replica caught up, every replica of every tablet shows the same rows again', ok: after.diverged.length === 0 && after.unsettled.length === 0 && after.converged === after.tablets, detail: convergenceLine(after) });

    // Provisional records: a follower stores a wrong intent of a transaction that is still open.
    // Nothing is committed, so every replica shows the same rows; the intents digests differ.
    const p = await pickFollower();
    await lab.driver.setFlag(p.victim, 'TEST_corrupt_tablet_replica', p.tabletId, false, 'tserver');
    lab.log(`${p.victim} (a follower of tablet ${p.tabletId}, led by ${p.leader}) set to store one wrong provisional record: TEST_corrupt_tablet_replica=${p.tabletId}`);
    const txn = await lab.client.beginTransaction({ timeoutMs: 30_000 });
    let open = 0;
    try {
      await untilCorrupted(p.victim, p.tabletId, async () => {
        // Rows on every tablet, in the one open transaction.
        await txn.table(EXPERIMENT_TABLE).upsertMany(Array.from({ length: MORE_ROWS }, (_, i) => ({ id: BigInt(1_000_000 + open + i), v: 'uncommitted' })), { timeoutMs: 30_000 });
        open += MORE_ROWS;
      });
      lab.log(`${p.victim} stored the wrong provisional record; the transaction (${open} rows) stays open`);
      const intentsFound = await check();
      lab.log(convergenceLine(intentsFound));
      const d = intentsFound.diverged;
      checks.push({
        name: 'with the transaction still open, the check names that tablet and follower by their provisional records (the rows shown agree)',
        ok: d.length === 1 && d[0]!.tabletId === p.tabletId && d[0]!.differing?.join() === p.victim && (d[0]!.why ?? '').includes('hold different provisional records'),
        detail: d.length ? d.map((t) => `${t.tabletId}: ${t.why}`).join(' | ') : convergenceLine(intentsFound),
      });
      figures['checkMsIntents'] = intentsFound.ms;
    } finally {
      await txn.abort({ timeoutMs: 30_000 }).catch(() => undefined);
      await lab.driver.setFlag('n0', 'enable_load_balancing', 'true', false, 'master');
    }
    const aborted = await check();
    lab.log(`transaction aborted: ${convergenceLine(aborted)}`);
    checks.push({ name: 'the abort removes the transaction\'s provisional records on every replica, the wrong one with them: all agree again', ok: aborted.diverged.length === 0 && aborted.unsettled.length === 0 && aborted.converged === aborted.tablets, detail: convergenceLine(aborted) });
    const final = await table.scan({ timeoutMs: 30_000 });
    const finalWrong = final.filter((r) => expected.get(r['id'] as bigint) !== r['v']).length;
    checks.push({ name: 'the table holds exactly what was written', ok: final.length === expected.size && finalWrong === 0, detail: `${final.length} rows of ${expected.size}, ${finalWrong} different` });
    figures['rowsWritten'] = expected.size;
    figures['checkMsBefore'] = before.ms;
    figures['checkMsFound'] = found.ms;
    figures['repairMs'] = repairMs;
    return {
      name: 'replica-divergence',
      title: 'One replica silently diverges: found by the convergence check, repaired by re-creating it',
      summary: `A 3-node ${lab.driver.kind} lab (RF 3, 3 tablets). ${ROWS} rows are written, then ${victim}, a follower of tablet ${tabletId}, stores one value wrong (TEST_corrupt_tablet_replica); clients still read right values. The replica convergence check (tessera admin check_replicas) compares what every replica shows at one hybrid time and names the tablet and follower; failing that replica (TEST_fail_tablet_replica) makes the master re-create it from a healthy one, and the replicas agree again. Then ${p.victim}, a follower of tablet ${p.tabletId}, stores a wrong provisional record of a transaction left open: the check names it by its intents digest before anything commits, and the abort removes it with the transaction.`,
      checks,
      figures,
      timeline: lab.timeline,
    };
  } finally {
    await lab.close();
  }
}
