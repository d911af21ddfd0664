/**
 * leader-failover: kill -9 the tserver leading a tablet while writers load the table. Measures the
 * time until another replica leads the tablet and the longest writer stall, then restarts the killed
 * tserver and checks that it catches up and that no acknowledged write was lost.
 */
import { leadersByTablet, replicasViaDriver, waitCaughtUp } from '../tablet-view';
import { waitUntil } from '../wait-until';
import type { Check, ExperimentOptions, ExperimentResult } from './experiment';
import { checkNoAckedWriteLost, EXPERIMENT_TABLE, openExperimentLab } from './experiment-lab';
import { longestStall, WriteLoad } from './write-load';

const WRITERS = 2;
const WARMUP_ACKS = 200;
const NEW_LEADER_TIMEOUT_MS = 30_000;
const AFTER_KILL_ACKS = 200;
const CATCH_UP_TIMEOUT_MS = 60_000;
/** Writer stalls are looked for from the kill until this long after the new leader was seen. */
const STALL_WINDOW_AFTER_LEADER_MS = 2_000;

// Long by design (docs/conventions.md): an experiment is a script read top to bottom, its steps the sections of its report; cutting it into functions would hide the order the report follows.
export async function leaderFailover(o: ExperimentOptions): Promise<ExperimentResult> {
  const lab = await openExperimentLab(o, 'leader-failover');
  const checks: Check[] = [];
  const figures: Record<string, number | string> = {};
  try {
    lab.startMemSampler(500);
    const load = new WriteLoad(lab.client, EXPERIMENT_TABLE, WRITERS, lab.t0);
    load.start();
    lab.log(`write load started (${WRITERS} sequential writers)`);
    await waitUntil(async () => load.ackCount() >= WARMUP_ACKS, { timeoutMs: 60_000, intervalMs: 50, what: `${WARMUP_ACKS} acknowledged writes` });

    const leaders = await lab.leaders();
    const [tabletId, victim] = leaders[0]!;
    lab.log(`tablet ${tabletId} is led by ${victim.node} (term ${victim.row.term}); kill -9 of its tserver`);
    const acksBefore = load.ackCount();
    // Timed from the start of the kill: the server dies somewhere inside the call, which is quick for
    // a local process and takes a docker exec for one server of a container.
    const killAt = lab.now();
    await lab.driver.kill(victim.node, 'tserver');
    figures['killCallMs'] = Math.round(lab.now() - killAt);

    let newLeader: { node: string; term: number } | undefined;
    try {
      newLeader = await waitUntil(
        async () => {
          const l = leadersByTablet(await replicasViaDriver(lab.driver)).get(tabletId);
          return l && l.node !== victim.node ? { node: l.node, term: l.row.term } : undefined;
        },
        { timeoutMs: NEW_LEADER_TIMEOUT_MS, intervalMs: 50, what: `a new leader of ${tabletId}` },
      );
    } catch {
      newLeader = undefined;
    }
    const newLeaderMs = lab.now() - killAt;
    lab.log(newLeader ? `new leader ${newLeader.node} (term ${newLeader.term}) after ${newLeaderMs.toFixed(0)} ms` : 'no new leader');
    checks.push({ name: 'another replica leads the tablet', ok: newLeader !== undefined, detail: newLeader ? `${newLeader.node} in term ${newLeader.term}, ${newLeaderMs.toFixed(0)} ms after the kill began (the kill call took ${String(figures['killCallMs'])} ms)` : `none within ${NEW_LEADER_TIMEOUT_MS} ms` });
    if (newLeader) figures['newLeaderMs'] = Math.round(newLeaderMs);

    let resumed = true;
    try {
      await waitUntil(async () => load.ackCount() >= acksBefore + AFTER_KILL_ACKS, { timeoutMs: 60_000, intervalMs: 50, what: 'writes after the kill' });
    } catch {
      resumed = false;
    }
    const res = await load.stop();
    const afterKill = res.acks.filter((a) => a.atMs > killAt).length;
    const stallMs = longestStall(res.ackTimesByWriter, killAt, killAt + newLeaderMs + STALL_WINDOW_AFTER_LEADER_MS);
    lab.log(`load stopped: ${res.acks.length} acknowledged, ${res.failures} failed, ${afterKill} after the kill, longest writer stall ${stallMs.toFixed(0)} ms`);
    checks.push({ name: 'writes resume after the kill', ok: resumed && afterKill > 0, detail: `${afterKill} writes acknowledged after the kill` });
    figures['acknowledgedWrites'] = res.acks.length;
    figures['failedWrites'] = res.failures;
    figures['longestWriterStallMs'] = Math.round(stallMs);

    lab.log(`restarting ${victim.node}'s tserver`);
    const restartAt = lab.now();
    await lab.driver.start(victim.node, 'tserver');
    let caughtUp = true;
    try {
      await waitCaughtUp(lab.driver, victim.node, CATCH_UP_TIMEOUT_MS, EXPERIMENT_TABLE);
    } catch {
      caughtUp = false;
    }
    const catchUpMs = lab.now() - restartAt;
    lab.log(caughtUp ? `${victim.node} caught up ${catchUpMs.toFixed(0)} ms after its restart` : `${victim.node} did not catch up`);
    checks.push({ name: 'the restarted replica catches up', ok: caughtUp, detail: caughtUp ? `${catchUpMs.toFixed(0)} ms after the restart (restart + log replay + catch-up)` : `not within ${CATCH_UP_TIMEOUT_MS} ms` });
    if (caughtUp) figures['restartAndCatchUpMs'] = Math.round(catchUpMs);

    figures['rowsReadBack'] = await checkNoAckedWriteLost(lab, res.acks, checks);
    return {
      name: 'leader-failover',
      title: 'Leader failover under a write load',
      summary: `A 3-node ${lab.driver.kind} lab (RF 3, 3 tablets) under ${WRITERS} sequential writers; the tserver leading tablet ${tabletId} (${victim.node}) was killed with SIGKILL, later restarted.`,
      checks,
      figures,
      chart: { title: 'Memtable bytes per node (table exp)', series: lab.memSeries(), yLabel: 'bytes' },
      timeline: lab.timeline,
    };
  } finally {
    await lab.close();
  }
}
