/**
 * partition-minority: cut one node (the master-less node leading the most tablets) off from the rest while writers load the
 * table. The majority must keep serving writes on every tablet (leaders move off the minority by
 * check-quorum), the minority must fall behind, and after heal it must catch up: each of its replicas
 * applies as far as its leader. No acknowledged write may be lost.
 *
 * `holdMs` (default 5 s; `--hold-ms`) sets how long the node stays cut off. Under Docker a long cut
 * (past rpc_connection_timeout_ms, 15 s) shows RPC keepalive at work: the servers close the
 * connections whose pings went unanswered (the figure rpcConnectionsClosedByKeepalive), so after the
 * heal fresh connections go through at once instead of waiting for TCP's next retransmission of
 * the old ones (tens of seconds after a long cut). While the node is cut off, connects to it whose
 * SYN stays unanswered are given up after rpc_tcp_connect_timeout_ms (the figure
 * rpcConnectsTimedOut) and tried again at once, so the heal is noticed within about a second. The
 * process driver cuts traffic above the WebSocket layer, which still answers pings and connects, so
 * nothing is closed or timed out there.
 */
import { rpcConnectionCount } from '../console-http';
import { laggingTablets, leadersByTablet, replicasViaDriver } from '../tablet-view';
import { sleep, waitUntil } from '../wait-until';
import { DbError, ErrorCode } from '../../common/errors';
import type { Check, ExperimentOptions, ExperimentResult } from './experiment';
import { checkCaughtUpAfterHeal, checkNoAckedWriteLost, EXPERIMENT_TABLE, openExperimentLab } from './experiment-lab';
import { WriteLoad } from './write-load';

const WRITERS = 4;
/**
 * A write already proposed at the cut-off old leader stays pending there (its outcome is unknown until
 * the partition heals), so each write is bounded: its writer gives up (outcome unknown, not counted as
 * acknowledged) and moves on to a fresh key, which the client routes to the new leader.
 */
const WRITE_TIMEOUT_MS = 2_000;
const WARMUP_ACKS = 200;
/** Default time the minority stays cut off. */
export const PARTITION_HOLD_MS = 5_000;
const HOLD_MS_MAX = 600_000;
const LEADERS_MOVE_TIMEOUT_MS = 30_000;
const CATCH_UP_TIMEOUT_MS = 60_000;

// Long by design (docs/conventions.md): an experiment is a script read top to bottom, its steps the sections of its report; cutting it into functions would hide the order the report follows.
export async function partitionMinority(o: ExperimentOptions): Promise<ExperimentResult> {
  const holdMs = o.params?.['holdMs'] ?? PARTITION_HOLD_MS;
  if (!Number.isInteger(holdMs) || holdMs < 1_000 || holdMs > HOLD_MS_MAX) throw new DbError(ErrorCode.INVALID_ARGUMENT, `partition-minority: --hold-ms must be a whole number of ms in [1000, ${HOLD_MS_MAX}], got ${holdMs}`);
  const lab = await openExperimentLab(o, 'partition-minority');
  const checks: Check[] = [];
  const figures: Record<string, number | string> = {};
  try {
    lab.startMemSampler(500);
    const load = new WriteLoad(lab.client, EXPERIMENT_TABLE, WRITERS, lab.t0, WRITE_TIMEOUT_MS);
    load.start();
    lab.log(`write load started (${WRITERS} sequential writers)`);
    await waitUntil(async () => load.ackCount() >= WARMUP_ACKS, { timeoutMs: 60_000, intervalMs: 50, what: `${WARMUP_ACKS} acknowledged writes` });

    // The node to cut: not n0 (it runs the master), preferably one that leads tablets, so the
    // experiment shows leadership moving to the majority.
    const leadersNow = leadersByTablet(await replicasViaDriver(lab.driver));
    const leads = (n: string): number => [...leadersNow.values()].filter((l) => l.node === n && l.row.table === EXPERIMENT_TABLE).length;
    const MINORITY = ['n1', 'n2'].sort((a, b) => leads(b) - leads(a))[0]!;
    figures['minorityNode'] = MINORITY;
    figures['tabletsLedByMinorityBeforeCut'] = leads(MINORITY);
    lab.log(`partition: ${MINORITY} (leading ${leads(MINORITY)} tablet(s)) cut off from the majority`);
    // Timed from the start of the cut: it takes effect inside the call (flags on every server, or a
    // docker network disconnect, which takes a while to return).
    const partAt = lab.now();
    await lab.driver.partition([MINORITY]);
    figures['partitionCallMs'] = Math.round(lab.now() - partAt);
    let leadersMoved = true;
    try {
      await waitUntil(
        async () => {
          const l = leadersByTablet(await replicasViaDriver(lab.driver));
          const mine = [...l.values()].filter((x) => x.row.table === EXPERIMENT_TABLE);
          return mine.length === 3 && mine.every((x) => x.node !== MINORITY);
        },
        { timeoutMs: LEADERS_MOVE_TIMEOUT_MS, intervalMs: 100, what: `every tablet led outside ${MINORITY}` },
      );
    } catch {
      leadersMoved = false;
    }
    const leadersMs = lab.now() - partAt;
    lab.log(leadersMoved ? `every tablet led by the majority ${leadersMs.toFixed(0)} ms after the cut began` : 'some tablet has no majority leader');
    checks.push({ name: 'every tablet is led by the majority', ok: leadersMoved, detail: leadersMoved ? `${leadersMs.toFixed(0)} ms after the cut began (the cut call took ${String(figures['partitionCallMs'])} ms)` : `not within ${LEADERS_MOVE_TIMEOUT_MS} ms` });
    if (leadersMoved) figures['majorityLeadersMs'] = Math.round(leadersMs);

    const acksAtHoldStart = load.ackCount();
    const holdFrom = lab.now();
    await sleep(Math.max(0, holdMs - (holdFrom - partAt))); // the load runs meanwhile; this is the observation window, not a wait on a condition
    const heldMs = lab.now() - holdFrom;
    const acksDuringHold = load.ackCount() - acksAtHoldStart;
    lab.log(`${acksDuringHold} writes acknowledged during the last ${heldMs.toFixed(0)} ms of partition`);
    checks.push({ name: 'the majority keeps serving writes', ok: acksDuringHold > 0, detail: `${acksDuringHold} writes acknowledged in ${heldMs.toFixed(0)} ms of partition (after the leaders moved)` });
    figures['partitionHoldMs'] = holdMs;
    figures['writesDuringPartition'] = acksDuringHold;
    figures['writesPerSecondDuringPartition'] = Math.round((acksDuringHold * 1000) / Math.max(1, heldMs));

    const lagging = laggingTablets(await replicasViaDriver(lab.driver), MINORITY, EXPERIMENT_TABLE) ?? [];
    checks.push({ name: 'the minority falls behind', ok: lagging.length > 0, detail: `${lagging.length} of its replicas behind their leaders` });

    const res = await load.stop();
    lab.log(`load stopped: ${res.acks.length} acknowledged, ${res.failures} failed`);
    figures['acknowledgedWrites'] = res.acks.length;
    figures['writesWithUnknownOutcome'] = res.failures;

    lab.log('heal');
    await lab.driver.heal();
    await checkCaughtUpAfterHeal(lab, MINORITY, 'the minority catches up after heal', CATCH_UP_TIMEOUT_MS, checks, figures);
    await sleep(1_000); // one more chart sample after catch-up
    // RPC keepalive: connections closed because their pings went unanswered, on every server.
    const webUrls = lab.driver.addresses().flatMap((n) => [n.tserver.webUrl, ...(n.master ? [n.master.webUrl] : [])]);
    const count = async (kind: 'closed_unanswered_ping' | 'connect_timed_out'): Promise<number> => (await Promise.all(webUrls.map((u) => rpcConnectionCount(u, kind)))).reduce<number>((a, b) => a + (b ?? 0), 0);
    const closed = await count('closed_unanswered_ping');
    const timedOut = await count('connect_timed_out');
    figures['rpcConnectionsClosedByKeepalive'] = closed;
    figures['rpcConnectsTimedOut'] = timedOut;
    lab.log(`${closed} RPC connection(s) closed by keepalive (a ping unanswered for rpc_connection_timeout_ms) and ${timedOut} connect attempt(s) given up with their SYN unanswered (rpc_tcp_connect_timeout_ms), on all servers`);

    await checkNoAckedWriteLost(lab, res.acks, checks);
    return {
      name: 'partition-minority',
      title: 'Minority partition and catch-up',
      summary: `A 3-node ${lab.driver.kind} lab (RF 3, 3 tablets) under ${WRITERS} sequential writers; ${String(figures['minorityNode'])} was cut off (${lab.driver.kind === 'docker' ? 'its container disconnected from the lab network' : 'TEST_drop_traffic_peers on every server'}) for ${holdMs} ms of load, then healed.`,
      checks,
      figures,
      chart: { title: 'Memtable bytes per node (table exp)', series: lab.memSeries(), yLabel: 'bytes' },
      timeline: lab.timeline,
    };
  } finally {
    await lab.close();
  }
}
