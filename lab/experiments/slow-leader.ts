/**
 * slow-leader: a slow disk under one node, seen from outside and worked around. One node leads
 * exactly one tablet of `exp` (the master's leader balancing is held all along, so only this
 * experiment moves leaders) and gets TEST_inject_sleep_before_applying_write_batch_ms (every write
 * batch it applies waits that long), under a load of writers upserting fresh rows:
 *  1. writes to the tablet it leads wait for it, writes to the others do not: a leader answers a
 *     write once it applied it, while a commit needs only a majority — the other follower stands in
 *     for a slow one;
 *  2. meanwhile its console's /rpcz lists those writes as inbound calls, as old as the delay, named
 *     by the client that sent them;
 *  3. its leadership moved away (leader_stepdown): every write is fast, though the node, a follower
 *     only now, still applies late — its replicas trail their leaders;
 *  4. the delay cleared: it catches up, and no acknowledged write is lost.
 */
import { partitionHash } from '../../common/partition-hash';
import { DbError, ErrorCode } from '../../common/errors';
import { tabletServerMethods, type Rpcz } from '../../rpc';
import type { NodeName } from '../cluster-spec';
import { leadersByTablet, replicasViaDriver } from '../tablet-view';
import { sleep, waitUntil } from '../wait-until';
import type { Check, ExperimentOptions, ExperimentResult } from './experiment';
import { checkCaughtUpAfterHeal, checkNoAckedWriteLost, EXPERIMENT_TABLE, openExperimentLab } from './experiment-lab';
import type { Ack } from './write-load';

const SLOW_FLAG = 'TEST_inject_sleep_before_applying_write_batch_ms';
/** The slow node's delay per applied write batch. */
const DELAY_MS = 800;
const WRITERS = 6;
/** Each phase's load lasts this long. */
const PHASE_MS = 4_000;
/** Bound on one write; far above the delay, so a slow write is measured, not failed. */
const WRITE_TIMEOUT_MS = 20_000;
const POLL_MS = 100;
const WRITES_MAX = 100_000;
const LEADER_MOVE_TIMEOUT_MS = 30_000;

/** One phase's writes: latency by the tablet written (the slow node's one, or the others). */
interface Phase {
  slowTablet: number[];
  others: number[];
  failures: number;
}

function pct(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function describeLatencies(l: readonly number[]): string {
  return `${l.length} writes, p50 ${pct(l, 50).toFixed(0)} ms, p95 ${pct(l, 95).toFixed(0)} ms, max ${(l.at(-1) ?? 0).toFixed(0)} ms`;
}

/** Runs `poll` every POLL_MS until `work` settles (one poll at a time); returns `work`'s result. */
async function whilePolling<T>(work: Promise<T>, poll: () => Promise<void>): Promise<T> {
  let done = false;
  const poller = (async () => {
    while (!done) {
      await poll();
      await sleep(POLL_MS);
    }
  })();
  try {
    return await work;
  } finally {
    done = true;
    await poller;
  }
}

// Long by design (docs/conventions.md): an experiment is a script read top to bottom, its steps the sections of its report; cutting it into functions would hide the order the report follows.
export async function slowLeader(o: ExperimentOptions): Promise<ExperimentResult> {
  const lab = await openExperimentLab(o, 'slow-leader');
  const checks: Check[] = [];
  const figures: Record<string, number | string> = { delayMs: DELAY_MS, writers: WRITERS, phaseMs: PHASE_MS };
  const check = (name: string, ok: boolean, detail: string): void => {
    checks.push({ name, ok, detail });
    lab.log(`${ok ? 'PASS' : 'FAIL'} ${name}: ${detail}`);
  };
  const masters = lab.driver.addresses().filter((n) => n.master !== undefined);
  const setBalancing = async (on: boolean): Promise<void> => {
    for (const m of masters) await lab.driver.setFlag(m.name, 'enable_load_balancing', String(on), false, 'master');
  };
  let slow: NodeName | undefined;
  let balancingHeld = false;
  const acks: Ack[] = [];
  let nextId = 0;
  /** Each acknowledged write as a chart point (ms since start, latency ms), by the tablet written. */
  const points = { slow: [] as Array<[number, number]>, others: [] as Array<[number, number]> };
  try {
    await setBalancing(false);
    balancingHeld = true;
    // The slow node: the leader of the first tablet; it keeps that one and hands the others on.
    const [keep, first] = (await lab.leaders()).sort(([a], [b]) => a.localeCompare(b))[0]!;
    const node = first.node;
    slow = node;
    const slowNode = lab.driver.addresses().find((n) => n.name === node)!;
    const rpc = lab.client.rpcClient();
    /** Ask `node` to step down from every tablet but `except` until it leads no other (bounded). */
    const stepDownExcept = (except: string | undefined): Promise<true> =>
      waitUntil(
        async () => {
          const still = (await lab.leaders()).filter(([id, x]) => x.node === node && id !== except);
          for (const [tabletId] of still) {
            await rpc.call(slowNode.tserver.rpcAddress, tabletServerMethods().leaderStepdown, { tabletId, newLeaderUuid: '' }, { timeoutMs: 5_000 }).catch((e: unknown) => {
              if (!(e instanceof DbError && e.code === ErrorCode.NOT_THE_LEADER)) throw e;
            });
          }
          return still.length === 0 ? true : undefined;
        },
        { timeoutMs: LEADER_MOVE_TIMEOUT_MS, intervalMs: 500, what: `${node} to lead no tablet of ${EXPERIMENT_TABLE}${except ? ` but ${except}` : ''}` },
      );
    await stepDownExcept(keep);
    const tablets = (await lab.client.tableLocations(EXPERIMENT_TABLE, { timeoutMs: 10_000 })).tablets;
    const tabletOf = (id: bigint): string | undefined => {
      const h = partitionHash([id]);
      return tablets.find((t) => h >= t.start && h < t.end)?.tabletId;
    };
    /** Writers upserting fresh rows for PHASE_MS, each write timed and sorted by its tablet. */
    const load = async (): Promise<Phase> => {
      const phase: Phase = { slowTablet: [], others: [], failures: 0 };
      const end = performance.now() + PHASE_MS;
      await Promise.all(
        Array.from({ length: WRITERS }, async () => {
          while (performance.now() < end && acks.length < WRITES_MAX) {
            const id = BigInt(nextId++);
            const value = `slow-leader-${id}`;
            const t = performance.now();
            try {
              await lab.client.table(EXPERIMENT_TABLE).upsert({ id, v: value }, { timeoutMs: WRITE_TIMEOUT_MS });
              const ms = performance.now() - t;
              const mine = tabletOf(id) === keep;
              (mine ? phase.slowTablet : phase.others).push(ms);
              acks.push({ id, value, atMs: lab.now() });
              const pts = mine ? points.slow : points.others;
              if (pts.length < WRITES_MAX) pts.push([lab.now(), ms]);
            } catch {
              phase.failures++;
            }
          }
        }),
      );
      phase.slowTablet.sort((a, b) => a - b);
      phase.others.sort((a, b) => a - b);
      return phase;
    };
    await lab.driver.setFlag(node, SLOW_FLAG, String(DELAY_MS), true, 'tserver');
    figures['slowNode'] = node;
    lab.log(`${node} leads tablet ${keep.slice(0, 8)} of ${EXPERIMENT_TABLE} (and no other); ${SLOW_FLAG}=${DELAY_MS} set on it; ${WRITERS} writers upsert fresh rows; load balancing held`);

    // Phase 1: the slow node leads one tablet. Its /rpcz is read all along: the oldest inbound Write.
    let oldestWrite = 0;
    let oldestCaller = '';
    const led = await whilePolling(load(), async () => {
      const z = (await lab.driver.consoleJson(node, 'tserver', '/api/v1/rpcz', 2_000).catch(() => undefined)) as Rpcz | undefined;
      for (const c of z?.inbound ?? []) {
        for (const k of c.inFlight) {
          if (k.method === 'Write' && k.elapsedMs > oldestWrite) {
            oldestWrite = k.elapsedMs;
            oldestCaller = c.caller ?? c.remote;
          }
        }
      }
    });
    const stillLeads = (await lab.leaders()).some(([id, x]) => id === keep && x.node === node);
    lab.log(`while ${node} leads ${keep.slice(0, 8)}: its tablet ${describeLatencies(led.slowTablet)}; the others ${describeLatencies(led.others)}; ${led.failures} failed; still its leader at the end: ${stillLeads}`);
    figures['ledSlowTabletP50Ms'] = Math.round(pct(led.slowTablet, 50));
    figures['ledOtherTabletsP50Ms'] = Math.round(pct(led.others, 50));
    check(
      `while ${node} leads a tablet, writes to it wait for ${node}'s slow apply and writes to the other tablets do not`,
      led.slowTablet.length > 0 && pct(led.slowTablet, 50) >= DELAY_MS * 0.9 && led.others.length > 0 && pct(led.others, 50) < DELAY_MS / 4 && led.failures === 0 && stillLeads,
      `its tablet: ${describeLatencies(led.slowTablet)}; the others: ${describeLatencies(led.others)}; ${led.failures} failed`,
    );
    const ownClient = `client pid ${process.pid}`;
    figures['oldestWriteOnRpczMs'] = Math.round(oldestWrite);
    check(
      `${node}'s /rpcz lists those writes as inbound calls while they wait, named by the client that sent them`,
      oldestWrite >= DELAY_MS / 2 && oldestCaller === ownClient,
      `oldest inbound Write seen ${Math.round(oldestWrite)} ms old, from ${oldestCaller || 'nobody'}`,
    );

    // Phase 2: its leadership moved away; the node, a follower only, is read for how far it trails.
    const movedAt = lab.now();
    await stepDownExcept(undefined);
    lab.log(`${node} stepped down from ${keep.slice(0, 8)} (leader_stepdown) in ${Math.round(lab.now() - movedAt)} ms`);
    let behindMax = 0;
    const moved = await whilePolling(load(), async () => {
      const all = await replicasViaDriver(lab.driver).catch(() => undefined);
      if (!all) return;
      const leadersNow = leadersByTablet(all);
      for (const r of all.find((n) => n.node === node)?.tablets ?? []) {
        const l = leadersNow.get(r.tabletId);
        if (r.table === EXPERIMENT_TABLE && l) behindMax = Math.max(behindMax, l.row.appliedIndex - r.appliedIndex);
      }
    });
    const all2 = [...moved.slowTablet, ...moved.others].sort((a, b) => a - b);
    lab.log(`with ${node} a follower only: ${describeLatencies(all2)}; ${moved.failures} failed; its replicas trailed their leaders by up to ${behindMax} applied entries`);
    figures['movedP50Ms'] = Math.round(pct(all2, 50));
    figures['movedP95Ms'] = Math.round(pct(all2, 95));
    figures['followerBehindMaxEntries'] = behindMax;
    const slow2 = all2.filter((l) => l >= DELAY_MS).length;
    check(
      `with ${node} a follower only, every tablet's writes are fast, though ${node} still applies late (a majority without it commits)`,
      moved.slowTablet.length > 0 && pct(moved.slowTablet, 50) < DELAY_MS / 4 && slow2 <= Math.floor(all2.length / 100) && moved.failures === 0 && behindMax > 0,
      `${keep.slice(0, 8)} (led by ${node} before): ${describeLatencies(moved.slowTablet)}; all: ${describeLatencies(all2)}, ${slow2} of ${DELAY_MS} ms or more; ${node}'s replicas trailed their leaders by up to ${behindMax} applied entries`,
    );

    // Phase 3: the delay cleared; the node catches up and nothing acknowledged is lost.
    await lab.driver.setFlag(node, SLOW_FLAG, '0', true, 'tserver');
    await checkCaughtUpAfterHeal(lab, node, `${node} catches up once its delay is cleared`, 60_000, checks, figures);
    await checkNoAckedWriteLost(lab, acks, checks);
    return {
      name: 'slow-leader',
      title: 'A slow node: its leadership holds writes up, its followership does not',
      summary: `A 3-node ${lab.driver.kind} lab (RF 3, 3 tablets, the master's leader balancing held); ${SLOW_FLAG}=${DELAY_MS} on ${node}, leading one tablet; ${WRITERS} writers upsert fresh rows for ${PHASE_MS / 1000} s while it leads, then again after leader_stepdown moved its leadership away.`,
      checks,
      figures,
      chart: {
        title: `Write latency: the tablet ${node} led (it leads it, then not), and the other tablets`,
        series: [
          { name: `tablet ${keep.slice(0, 8)} (led by ${node}, then moved)`, points: points.slow },
          { name: 'the other tablets', points: points.others },
        ],
        yLabel: 'ms',
      },
      timeline: lab.timeline,
    };
  } finally {
    if (slow) await lab.driver.setFlag(slow, SLOW_FLAG, '0', true, 'tserver').catch(() => undefined);
    if (balancingHeld) await setBalancing(true).catch(() => undefined);
    await lab.close();
  }
}
