/**
 * Crash loop: unique inserts run while every process of the cluster (master and all tservers) is
 * killed with SIGKILL and restarted, `cycles` times. Afterwards one final read must hold every
 * acknowledged insert (no acknowledged write lost), and every restart must come back: the cluster
 * healthy and a write acknowledged again within RECOVERY_TIMEOUT_MS. At the end every replica of
 * every tablet must show the same rows (replica-convergence.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { SeededRng } from '../../common/rng';
import { TesseraClient } from '../../client/tessera-client';
import { HistoryRecorder } from './history';
import type { FaultWindow } from './nemesis';
import type { DriverKind } from '../cluster-spec';
import { planVerifyCluster } from './plan-verify-cluster';
import { SetWorkload } from './set-workload';
import { judge, type WorkloadReport } from './verify-report';
import { makeDirs } from '../../common/fs-dirs';
import { checkReplicaConvergence, convergenceLine, withConvergence } from './replica-convergence';
import { checkIntentsDrained, drainLine, INTENTS_DRAIN_TIMEOUT_MS, withDrain } from './intents-drain';

export const RECOVERY_TIMEOUT_MS = 60_000;
const CRASH_CONCURRENCY = 8;
const CRASH_OP_TIMEOUT_MS = 2_000;

export interface CrashLoopOptions {
  cycles: number;
  seed: number;
  dir: string;
  hostBase: number;
  portOffset: number;
  /** process (default) or docker (every server killed inside / with its container). */
  driver?: DriverKind;
  /** Masters on nodes 0 .. masters-1 (default 1): every one is killed in each cycle. */
  masters?: 1 | 3;
  /** Writes between crashes (ms range). */
  uptimeMs?: [number, number];
  log?: (line: string) => void;
}

/** The cluster the crash loop kills. */
type CrashCluster = Awaited<ReturnType<typeof planVerifyCluster>>;

/** The insert load: CRASH_CONCURRENCY processes writing until stopped, noting when a write was last acknowledged. */
class CrashWriters {
  /** History time of the last acknowledged write. */
  lastOkNs = 0;
  private stopped = false;
  private readonly done: Promise<void[]>;

  constructor(w: SetWorkload, client: TesseraClient, recorder: HistoryRecorder, rng: SeededRng) {
    const worker = async (slot: number): Promise<void> => {
      let proc = slot;
      // Bounded by the cycle count: the loop sets `stopped` after the last cycle.
      while (!this.stopped) {
        const type = await w.step({ client, recorder, process: proc, rng, opTimeoutMs: CRASH_OP_TIMEOUT_MS });
        if (type === 'ok') this.lastOkNs = recorder.nowNs();
        if (type === 'info') {
          proc += CRASH_CONCURRENCY;
          // Do not spin while everything is down.
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    };
    this.done = Promise.all(Array.from({ length: CRASH_CONCURRENCY }, (_, i) => worker(i)));
  }

  /** Stop the processes and wait for their last operations. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
  }
}

/** Restart every server and wait until the cluster is healthy and a write is acknowledged again; throws past RECOVERY_TIMEOUT_MS. */
async function restartAndRecover(cluster: CrashCluster, recorder: HistoryRecorder, writers: CrashWriters): Promise<void> {
  for (const s of cluster.servers) await cluster.start(s);
  await cluster.waitHealthy(RECOVERY_TIMEOUT_MS);
  const since = recorder.nowNs();
  const deadline = Date.now() + RECOVERY_TIMEOUT_MS;
  while (writers.lastOkNs < since && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (writers.lastOkNs < since) throw new Error(`no write acknowledged within ${RECOVERY_TIMEOUT_MS} ms after the restart`);
}

/** Kill every process `cycles` times under the load; returns the fault windows and the cycles that did not recover. */
async function runCycles(o: CrashLoopOptions, cluster: CrashCluster, recorder: HistoryRecorder, rng: SeededRng, writers: CrashWriters, log: (line: string) => void): Promise<{ windows: FaultWindow[]; recoveryFailures: string[] }> {
  const [upLo, upHi] = o.uptimeMs ?? [800, 2_000];
  const windows: FaultWindow[] = [];
  const recoveryFailures: string[] = [];
  try {
    for (let cycle = 0; cycle < o.cycles; cycle++) {
      await new Promise((r) => setTimeout(r, upLo + rng.int(upHi - upLo + 1)));
      const win: FaultWindow = { kind: 'kill', target: 'every process', startNs: recorder.nowNs(), endNs: 0, note: `cycle ${cycle + 1}` };
      windows.push(win);
      await Promise.all(cluster.servers.map((s) => cluster.kill9(s)));
      try {
        await restartAndRecover(cluster, recorder, writers);
      } catch (e) {
        recoveryFailures.push(`cycle ${cycle + 1}: ${(e as Error).message}`);
        win.endNs = recorder.nowNs();
        break;
      }
      win.endNs = recorder.nowNs();
      log(`crash cycle ${cycle + 1}/${o.cycles}: recovered in ${Math.round((win.endNs - win.startNs) / 1e6)} ms`);
    }
  } finally {
    await writers.stop();
  }
  return { windows, recoveryFailures };
}

export async function runCrashLoop(o: CrashLoopOptions): Promise<WorkloadReport> {
  const log = o.log ?? (() => undefined);
  const rng = new SeededRng(o.seed);
  const clusterDir = path.join(o.dir, 'cluster-crash');
  fs.rmSync(clusterDir, { recursive: true, force: true });
  const driver = o.driver ?? 'process';
  const cluster = await planVerifyCluster({ driver, baseDir: clusterDir, tservers: 3, ...(o.masters ? { masters: o.masters } : {}), hostBase: o.hostBase, portOffset: o.portOffset, log });
  let client: TesseraClient | undefined;
  const t0 = Date.now();
  try {
    await cluster.startAll(RECOVERY_TIMEOUT_MS);
    client = await TesseraClient.connect({ ...cluster.connectOptions(), timeoutMs: 10_000 });
    const w = new SetWorkload('verify_crash');
    await w.setup(client);
    const recorder = new HistoryRecorder();
    const writers = new CrashWriters(w, client, recorder, rng);
    const { windows, recoveryFailures } = await runCycles(o, cluster, recorder, rng, writers, log);
    await w.final(client, recorder, 1_000_000_000);
    // Replay and remote bootstrap after every crash must leave the replicas equal.
    const convergence = await checkReplicaConvergence({ tservers: cluster.tservers, replicationFactor: 3, timeoutMs: RECOVERY_TIMEOUT_MS });
    log(`crash: ${convergenceLine(convergence)}`);
    const drain = await checkIntentsDrained({ tservers: cluster.tservers, timeoutMs: INTENTS_DRAIN_TIMEOUT_MS });
    log(`crash: ${drainLine(drain)}`);
    makeDirs(o.dir, 'report directory');
    fs.writeFileSync(path.join(o.dir, 'history-crash.json'), JSON.stringify({ workload: 'crash', seed: o.seed, faults: windows, history: recorder.ops }));
    const v = withDrain(withConvergence(w.check(recorder.ops), convergence), drain);
    if (recoveryFailures.length) {
      v.valid = false;
      v.anomalies['recovery-failed'] = recoveryFailures.length;
      v.details.push(...recoveryFailures);
    }
    return { ...judge('crash', recorder.ops, windows, v, o.seed, Date.now() - t0), convergence, drain, driver, ...(o.masters && o.masters > 1 ? { masters: o.masters } : {}) };
  } finally {
    await client?.close().catch(() => undefined);
    await cluster.destroy(false);
  }
}
