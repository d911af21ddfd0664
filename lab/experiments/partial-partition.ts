/**
 * partial-partition (Jepsen's "bridge"): a tablet's leader and one of its followers stop hearing each
 * other — Raft traffic and heartbeats dropped between the two nodes through TEST_drop_traffic_peers on
 * both, with either driver (`lab.driver.partition([leader], [follower])`, as `tessera lab partition
 * LEADER --from FOLLOWER` does) — while the third node still reaches both. Under a write load:
 *  - the cut-off follower hears no leader and its election timer fires, but its pre-votes reach only the
 *    third node, which refuses them: no tablet changes leader or term, and writes go on through
 *    leader + third node. On the loaded table the follower's log is also behind (refused for that
 *    alone), so a second table `idle` takes no writes: there the cut-off replica's log is as long as
 *    anyone's, and only the third node's check-quorum lease (it heard the leader within an election
 *    timeout) refuses it;
 *  - the follower falls behind on the leader's tablets, and catches up after the heal;
 *  - no acknowledged write is lost.
 * The master's leader balancing is off during the cut so a planned transfer is not taken for a
 * disruption.
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { NodeName } from '../cluster-spec';
import { raftMessagesDropped } from '../console-http';
import { leadersByTablet, replicasViaDriver } from '../tablet-view';
import { sleep, waitUntil } from '../wait-until';
import type { Check, ExperimentOptions, ExperimentResult } from './experiment';
import { checkCaughtUpAfterHeal, checkNoAckedWriteLost, EXPERIMENT_TABLE, openExperimentLab } from './experiment-lab';
import { WriteLoad } from './write-load';

const WRITERS = 4;
const WRITE_TIMEOUT_MS = 2_000;
const WARMUP_ACKS = 200;
/** Several election timeouts (1.5–3 s by default): the follower campaigns more than once. */
const CUT_HOLD_MS = 6_000;
const SAMPLE_MS = 200;
const CATCH_UP_TIMEOUT_MS = 60_000;
/** A table nobody writes during the cut (its replicas' logs stay equal). */
const IDLE_TABLE = 'idle';

// Long by design (docs/conventions.md): an experiment is a script read top to bottom, its steps the sections of its report; cutting it into functions would hide the order the report follows.
export async function partialPartition(o: ExperimentOptions): Promise<ExperimentResult> {
  const lab = await openExperimentLab(o, 'partial-partition');
  const checks: Check[] = [];
  const figures: Record<string, number | string> = {};
  const nodes = lab.driver.addresses();
  /** Raft messages the tservers of these nodes dropped since they started (tserver_raft_messages{direction="dropped"}). */
  const dropped = async (names: readonly NodeName[]): Promise<number> => {
    let sum = 0;
    for (const n of nodes.filter((x) => names.includes(x.name))) {
      const d = await raftMessagesDropped(n.tserver.webUrl, 5_000);
      if (d === undefined) throw new DbError(ErrorCode.NOT_FOUND, `${n.name}: no tserver_raft_messages{direction="dropped"} on /prometheus-metrics`);
      sum += d;
    }
    return sum;
  };
  /** The tablets of both tables: leader node and term of each. */
  const leadership = async (): Promise<Map<string, string>> => {
    const l = leadersByTablet(await replicasViaDriver(lab.driver));
    return new Map([...l].filter(([, x]) => x.row.table === EXPERIMENT_TABLE || x.row.table === IDLE_TABLE).map(([id, x]) => [id, `${x.node} term ${x.row.term}`]));
  };
  /** Tablets of `table` in a leadership map. */
  const tabletsOf = async (table: string): Promise<Set<string>> => new Set([...leadersByTablet(await replicasViaDriver(lab.driver))].filter(([, x]) => x.row.table === table).map(([id]) => id));
  let cut: [NodeName, NodeName] | undefined;
  try {
    lab.startMemSampler(500);
    await lab.client.createTable({ name: IDLE_TABLE, columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 3 });
    lab.log(`table ${IDLE_TABLE} created (3 tablets, RF 3; nothing writes it)`);
    const load = new WriteLoad(lab.client, EXPERIMENT_TABLE, WRITERS, lab.t0, WRITE_TIMEOUT_MS);
    load.start();
    lab.log(`write load started (${WRITERS} sequential writers)`);
    await waitUntil(async () => load.ackCount() >= WARMUP_ACKS, { timeoutMs: 60_000, intervalMs: 50, what: `${WARMUP_ACKS} acknowledged writes` });

    // Leaders holding still with the balancer off (a transfer it began may still end).
    await lab.driver.setFlag('n0', 'enable_load_balancing', 'false', false, 'master');
    let seen = '';
    await waitUntil(
      async () => {
        const now = JSON.stringify([...(await leadership())]);
        const still = now === seen && (await leadership()).size === 6;
        seen = now;
        if (!still) await sleep(500);
        return still;
      },
      { timeoutMs: 30_000, intervalMs: 0, what: 'tablet leaders to hold still with the balancer off' },
    );
    const before = await leadership();
    lab.log(`leaders before the cut: ${[...before].map(([id, l]) => `${id.slice(0, 8)} ${l}`).join(', ')}`);

    // The leader of a tablet of the loaded table, and a follower of it: not n0 when possible (it runs the master too).
    const loaded = await tabletsOf(EXPERIMENT_TABLE);
    const idle = await tabletsOf(IDLE_TABLE);
    const leaderNode = [...before].find(([id]) => loaded.has(id))![1].split(' ')[0] as NodeName;
    const others = nodes.map((n) => n.name).filter((n) => n !== leaderNode);
    const follower = others.find((n) => n !== 'n0') ?? others[0]!;
    const third = others.find((n) => n !== follower)!;
    cut = [leaderNode, follower];
    figures['leader'] = leaderNode;
    figures['cutOffFollower'] = follower;
    figures['bridgeNode'] = third;
    const droppedBefore = await dropped(cut);
    lab.log(`cut: ${leaderNode} (leads ${[...before.values()].filter((l) => l.startsWith(`${leaderNode} `)).length} tablet(s)) and ${follower} stop hearing each other; ${third} reaches both`);
    await lab.driver.partition([leaderNode], [follower]);
    const cutAt = lab.now();
    const acksAtCut = load.ackCount();

    // Watch leadership through the whole hold: any change of leader or term is a disruption.
    const changes: string[] = [];
    while (lab.now() - cutAt < CUT_HOLD_MS) {
      await sleep(SAMPLE_MS);
      const now = await leadership();
      for (const [id, l] of before) {
        const n = now.get(id) ?? 'no leader';
        if (n !== l && !changes.some((c) => c.startsWith(id.slice(0, 8)))) changes.push(`${id.slice(0, 8)}: ${l} → ${n} at ${(lab.now() - cutAt).toFixed(0)} ms`);
      }
    }
    const acksDuringCut = load.ackCount() - acksAtCut;
    const droppedDuring = (await dropped(cut)) - droppedBefore;
    figures['raftMessagesDroppedDuringCut'] = droppedDuring;
    figures['writesDuringCut'] = acksDuringCut;
    figures['writesPerSecondDuringCut'] = Math.round((acksDuringCut * 1000) / CUT_HOLD_MS);
    lab.log(`${droppedDuring} Raft messages dropped between ${leaderNode} and ${follower}; ${acksDuringCut} writes acknowledged in ${CUT_HOLD_MS} ms`);
    checks.push({ name: `the cut holds: ${leaderNode} and ${follower} drop each other's Raft messages`, ok: droppedDuring > 0, detail: `${droppedDuring} Raft messages dropped in ${CUT_HOLD_MS} ms` });
    // The idle tablets where the cut separates leader and follower: only the lease protects those.
    const idleCut = [...before].filter(([id, l]) => idle.has(id) && (l.startsWith(`${leaderNode} `) || l.startsWith(`${follower} `))).map(([id]) => id.slice(0, 8));
    figures['idleTabletsLedAcrossTheCut'] = idleCut.length;
    checks.push({
      name: 'no tablet changes leader or term: the cut-off replicas\' pre-votes are refused by the node that still hears the leader',
      ok: changes.length === 0,
      detail:
        (changes.length === 0 ? `${before.size} tablets (${loaded.size} loaded, ${idle.size} idle), same leader and term in ${Math.floor(CUT_HOLD_MS / SAMPLE_MS)} samples over ${CUT_HOLD_MS} ms` : changes.join('; ')) +
        `; idle tablets whose leader is on one side of the cut and a follower on the other (logs equal: only the lease refuses): ${idleCut.length ? idleCut.join(', ') : 'none'}`,
    });
    checks.push({ name: 'writes go on through the leader and the node reaching both', ok: acksDuringCut > 0, detail: `${acksDuringCut} writes acknowledged during the cut` });

    // The follower is behind on the leader's tablets (it hears nothing from that leader).
    const replicas = await replicasViaDriver(lab.driver);
    const ledByLeader = [...before].filter(([id, l]) => loaded.has(id) && l.startsWith(`${leaderNode} `)).map(([id]) => id);
    const appliedOn = (n: NodeName, id: string): number => replicas.find((r) => r.node === n)?.tablets?.find((t) => t.tabletId === id)?.appliedIndex ?? -1;
    const behind = ledByLeader.filter((id) => appliedOn(follower, id) < appliedOn(leaderNode, id));
    checks.push({
      name: `${follower} falls behind on the tablets ${leaderNode} leads`,
      ok: behind.length > 0,
      detail: ledByLeader.map((id) => `${id.slice(0, 8)}: ${follower} applied ${appliedOn(follower, id)}, ${leaderNode} ${appliedOn(leaderNode, id)}`).join('; '),
    });

    const res = await load.stop();
    lab.log(`load stopped: ${res.acks.length} acknowledged, ${res.failures} failed`);
    figures['acknowledgedWrites'] = res.acks.length;
    figures['writesWithUnknownOutcome'] = res.failures;

    lab.log('heal');
    await lab.driver.heal();
    cut = undefined;
    await checkCaughtUpAfterHeal(lab, follower, `${follower} catches up after heal`, CATCH_UP_TIMEOUT_MS, checks, figures);
    await lab.driver.setFlag('n0', 'enable_load_balancing', 'true', false, 'master');

    await checkNoAckedWriteLost(lab, res.acks, checks);
    return {
      name: 'partial-partition',
      title: 'Partial partition: a follower cut from its leader, a majority that still hears it',
      summary: `A 3-node ${lab.driver.kind} lab (RF 3, 3 tablets) under ${WRITERS} sequential writers; ${String(figures['leader'])} (leading a tablet) and ${String(figures['cutOffFollower'])} dropped each other's Raft traffic and heartbeats (TEST_drop_traffic_peers on both) for ${CUT_HOLD_MS} ms while ${String(figures['bridgeNode'])} reached both; leader balancing off meanwhile.`,
      checks,
      figures,
      chart: { title: 'Memtable bytes per node (table exp)', series: lab.memSeries(), yLabel: 'bytes' },
      timeline: lab.timeline,
    };
  } finally {
    if (cut) await lab.driver.heal().catch(() => undefined);
    await lab.close();
  }
}
