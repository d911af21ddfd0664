/**
 * One verification run: start a fresh cluster, run a workload with `concurrency` logical processes
 * while the nemesis plays its seeded schedule, heal everything, do the final read, check, judge.
 * Bounded: the op loop stops at timeMs or opsMax, every client call has a deadline, the final read
 * retries a bounded number of times.
 */
import type { IsolationLevel } from '../../client/transaction';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { SeededRng } from '../../common/rng';
import { TesseraClient } from '../../client/tessera-client';
import { HistoryRecorder } from './history';
import { Nemesis } from './nemesis';
import { buildSchedule, type NemesisKind } from './nemesis-schedule';
import { RegisterWorkload, type RegisterWriteMode } from './register-workload';
import { BankWorkload } from './bank-workload';
import { PercolatorBankWorkload } from './percolator-bank-workload';
import { AppendWorkload } from './append-workload';
import { SetWorkload } from './set-workload';
import { CounterWorkload } from './counter-workload';
import { LockWorkload } from './lock-workload';
import type { DriverKind } from '../cluster-spec';
import { planVerifyCluster } from './plan-verify-cluster';
import { historyCounts, judge, unavailableReport, type WorkloadReport } from './verify-report';
import type { Workload } from './workload';
import { makeDirs } from '../../common/fs-dirs';
import { DbError, ErrorCode } from '../../common/errors';
import { createCa, createNodeCert } from '../tls-certs';
import { htFrom } from '../../common/hybrid-time';
import { checkReplicaConvergence, convergenceLine, withConvergence } from './replica-convergence';
import { checkIntentsDrained, drainLine, INTENTS_DRAIN_TIMEOUT_MS, withDrain } from './intents-drain';

export const WORKLOAD_NAMES = ['register', 'set', 'bank', 'append', 'counter', 'lock'] as const;
export const TXN_PROTOCOLS = ['yugabyte', 'percolator'] as const;
export type TxnProtocol = (typeof TXN_PROTOCOLS)[number];
export type WorkloadName = (typeof WORKLOAD_NAMES)[number];

export interface RunOptions {
  workload: WorkloadName;
  nemesis: readonly NemesisKind[];
  timeMs: number;
  seed: number;
  /** Run directory: cluster data/logs go under it, plus history-<workload>.json. */
  dir: string;
  hostBase: number;
  /** Process driver: added to the standard ports; docker: the published-port offset (VERIFY_DOCKER_PORT_OFFSET is the CLI's default). */
  portOffset: number;
  /** Who runs the cluster: child processes (default) or a Docker lab created (and removed) by the run. */
  driver?: DriverKind;
  /** Masters on nodes 0 .. masters-1 (default 1); with 3 a 'master' fault hits the catalog's leader. */
  masters?: 1 | 3;
  /** Isolation of the transactions of bank, append and register's cas/txn writes (default snapshot). */
  isolation?: IsolationLevel;
  /** Transactions keep their writes to the commit (single-tablet fast path; ClientOptions.deferTxnWrites). */
  deferTxnWrites?: boolean;
  concurrency?: number;
  opsMax?: number;
  opTimeoutMs?: number;
  skewBeyond?: boolean;
  /** register: how blind writes are sent (default 'direct', the non-transactional fast path). */
  registerWrites?: RegisterWriteMode;
  /** bank: YugabyteDB-style transactions (default) or Percolator's (docs/percolator.md). */
  txnProtocol?: TxnProtocol;
  /**
   * A secured cluster (process driver): TLS (a CA and node certificates made for the run) and a
   * cluster secret on every server; the workload's client and the nemesis's console calls use them.
   */
  secure?: boolean;
  /** bank with Percolator: the client-crash nemesis (a share of transfers stop as if their client died). */
  clientCrash?: boolean;
  /**
   * End the run as soon as the history counts (>= MIN_OK_OPS ok operations and >= MIN_FAULT_WINDOWS
   * applied fault windows ended at least RECOVERY_AFTER_FAULT_MS ago), instead of at timeMs.
   */
  endWhenCounted?: boolean;
  keepData?: boolean;
  /** Extra `--name=value` flags for every server (e.g. --log_level=debug while chasing an anomaly). */
  serverFlags?: string[];
  log?: (line: string) => void;
}

export const DEFAULT_CONCURRENCY = 10;
export const DEFAULT_OPS_MAX = 200_000;
export const DEFAULT_OP_TIMEOUT_MS = 2_000;
/**
 * One attempt of a workload's operation waits at most this long for its answer (a quarter of the
 * default operation timeout): under a pause or partition the client resends within the operation's
 * deadline, so writes are resent as retryable requests and the checkers see whether a copy was ever
 * done twice or answered without being done.
 */
export const VERIFY_SINGLE_CALL_TIMEOUT_MS = 500;
const CLUSTER_UP_TIMEOUT_MS = 60_000;
/** The replica convergence check asks again until this deadline (tablets still moving are reported unsettled). */
const CONVERGENCE_TIMEOUT_MS = 60_000;
/** The same at the middle of the run: the cluster has settled by then, so a short deadline. */
const CONVERGENCE_PAST_TIMEOUT_MS = 10_000;

const FAIL_BACKOFF_MS = 20;
/** An early end waits this long after the last counted fault window, so recovery is in the history. */
export const RECOVERY_AFTER_FAULT_MS = 1_000;

/** A workload, or why it cannot run on this tree. */
export function makeWorkload(name: WorkloadName, client?: TesseraClient, o: { registerWrites?: RegisterWriteMode; isolation?: IsolationLevel; txnProtocol?: TxnProtocol; clientCrash?: boolean } = {}): Workload | string {
  const isolation = o.isolation ?? 'snapshot';
  if (o.txnProtocol === 'percolator') {
    if (name !== 'bank' && name !== 'append') return `${name}: runs through YugabyteDB-style transactions only (--txn_protocol percolator: bank, append)`;
    if (isolation !== 'snapshot') return `${name} through Percolator: snapshot isolation only (the paper's)`;
    if (name === 'append') return o.clientCrash ? 'append through Percolator: the client-crash nemesis runs with bank' : new AppendWorkload('snapshot', 'percolator');
    return new PercolatorBankWorkload({ ...(o.clientCrash ? { clientCrash: true } : {}) });
  }
  if (o.clientCrash) return `${name}: the client-crash nemesis needs --txn_protocol percolator`;
  const hasTxn = client !== undefined && typeof (client as unknown as Record<string, unknown>)['beginTransaction'] === 'function';
  // Without transactions the register runs reads and writes only (its cas is a transaction).
  if (name === 'register') return new RegisterWorkload({ cas: hasTxn, isolation, ...(o.registerWrites ? { writes: o.registerWrites } : {}) });
  if (name === 'set') return new SetWorkload();
  if (name === 'counter') return new CounterWorkload();
  if (name === 'lock') return new LockWorkload();
  if (!hasTxn) return `${name}: needs client.beginTransaction (distributed transactions are not in this tree yet)`;
  return name === 'bank' ? new BankWorkload(isolation) : new AppendWorkload(isolation);
}

/** Certificates (a CA; a node certificate per loopback host the run may use) and a cluster secret for a secured run. */
function secureFlags(o: RunOptions, dir: string): string[] {
  if ((o.driver ?? 'process') !== 'process') throw new DbError(ErrorCode.INVALID_ARGUMENT, 'a secured verify run (--secure) uses the process driver');
  fs.rmSync(dir, { recursive: true, force: true });
  createCa(dir);
  const hosts = new Set(['127.0.0.1', ...Array.from({ length: 3 }, (_, i) => `127.0.0.${o.hostBase + i}`)]);
  for (const h of hosts) createNodeCert(dir, h);
  const secret = path.join(dir, 'cluster.secret');
  fs.writeFileSync(secret, `${crypto.randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  return [`--certs_dir=${dir}`, `--cluster_secret_file=${secret}`];
}

/** The cluster a run plays against. */
type RunCluster = Awaited<ReturnType<typeof planVerifyCluster>>;

/** What the report says of the cluster. */
function reportShape(o: RunOptions, driver: DriverKind) {
  return { driver, ...(o.masters && o.masters > 1 ? { masters: o.masters } : {}), ...(o.isolation === 'serializable' && o.workload !== 'set' ? { isolation: o.isolation } : {}), ...(o.deferTxnWrites === true && o.workload !== 'set' ? { deferTxnWrites: true } : {}) };
}

/** What the op phase leaves for the checks: the history, the fault windows, its start, and the middle of the run. */
interface OpsPhase {
  recorder: HistoryRecorder;
  nemesis: Nemesis;
  t0: number;
  midHt: bigint;
}

/** Run the workload's processes while the nemesis plays its schedule; returns once both are done. */
async function runOpsUnderNemesis(o: RunOptions, cluster: RunCluster, client: TesseraClient, w: Workload, log: (line: string) => void): Promise<OpsPhase> {
  const concurrency = o.concurrency ?? DEFAULT_CONCURRENCY;
  const opsMax = o.opsMax ?? DEFAULT_OPS_MAX;
  const driver = o.driver ?? 'process';
  const recorder = new HistoryRecorder();
  // Row locks end at a split and the children's fencing tokens start above the parent's (docs/rows.md): the lock workload runs under splits too.
  const kinds = o.nemesis;
  const schedule = buildSchedule({ seed: o.seed, kinds, timeMs: o.timeMs, tservers: 3, ...(o.skewBeyond ? { skewBeyond: true } : {}) });
  log(`${o.workload}: ${schedule.length} fault window(s) scheduled over ${o.timeMs} ms (seed ${o.seed}, ${driver} driver)`);
  const nemesis = new Nemesis({ cluster, client, table: w.table, nowNs: () => recorder.nowNs(), log, seed: o.seed });
  const t0 = Date.now();
  const end = t0 + o.timeMs;
  let started = 0;
  let okOps = 0;
  let stopped = false;
  const counted = (): boolean => historyCounts(okOps, nemesis.windows, recorder.nowNs(), RECOVERY_AFTER_FAULT_MS);
  const stop = (): boolean => {
    if (!stopped && o.endWhenCounted && counted()) {
      stopped = true;
      log(`${o.workload}: history counts (${okOps} ok ops, fault window(s) passed) after ${Date.now() - t0} ms: ending early`);
    }
    return stopped || Date.now() >= end;
  };
  const nemesisDone = nemesis.run(schedule, t0, stop);
  const rng = new SeededRng(o.seed ^ 0x0b5);
  const worker = async (slot: number): Promise<void> => {
    let proc = slot;
    while (!stop() && started < opsMax) {
      started++;
      const type = await w.step({ client, recorder, process: proc, rng, opTimeoutMs: o.opTimeoutMs ?? DEFAULT_OP_TIMEOUT_MS });
      // An indeterminate op retires its process (Jepsen): a new process id takes the slot.
      if (type === 'ok') okOps++;
      if (type === 'info') proc += concurrency;
      // A failing cluster must not be hammered in a tight loop (and fill the history with fails).
      if (type !== 'ok') await new Promise((r) => setTimeout(r, FAIL_BACKOFF_MS));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, i) => worker(i)));
  // The middle of the history: the replicas must agree on what was there then too (MVCC history).
  const midHt = htFrom(Math.round(((t0 + Date.now()) / 2) * 1000));
  stopped = true;
  await nemesisDone;
  return { recorder, nemesis, t0, midHt };
}

/** Heal, settle, do the final read, then check replica convergence (now and at the middle of the run) and intents drained. */
async function settleAndCheckReplicas(o: RunOptions, cluster: RunCluster, client: TesseraClient, w: Workload, ops: OpsPhase, log: (line: string) => void) {
  const concurrency = o.concurrency ?? DEFAULT_CONCURRENCY;
  // Heal whatever the last window left behind, then let the cluster settle before the final read.
  const problem = await cluster.settle(client.rpcClient(), CLUSTER_UP_TIMEOUT_MS);
  if (problem) log(problem);
  await w.final(client, ops.recorder, concurrency * 1_000_000);
  // Every replica of every tablet must show the same rows (what client histories cannot see).
  const convergence = await checkReplicaConvergence({ tservers: cluster.tservers, replicationFactor: 3, timeoutMs: CONVERGENCE_TIMEOUT_MS });
  log(`${o.workload}: ${convergenceLine(convergence)}`);
  // Below a replica's history floor (aggressive history GC flags) the past is unreadable: unsettled, not an anomaly.
  const past = await checkReplicaConvergence({ tservers: cluster.tservers, replicationFactor: 3, timeoutMs: CONVERGENCE_PAST_TIMEOUT_MS, readHt: ops.midHt });
  const pastAt = 'at the middle of the run';
  log(`${o.workload}: ${convergenceLine(past, pastAt)}`);
  // Every transaction ended: no replica may keep any of their provisional records.
  const drain = await checkIntentsDrained({ tservers: cluster.tservers, timeoutMs: INTENTS_DRAIN_TIMEOUT_MS });
  log(`${o.workload}: ${drainLine(drain)}`);
  if (o.deferTxnWrites === true) log(`${o.workload}: transaction commits: ${client.txnCommits.singleTablet} by the single-tablet fast path, ${client.txnCommits.distributed} distributed`);
  return { convergence, past, pastAt, drain };
}

export async function runWorkload(o: RunOptions): Promise<WorkloadReport> {
  const log = o.log ?? (() => undefined);
  const clusterDir = path.join(o.dir, `cluster-${o.workload}`);
  fs.rmSync(clusterDir, { recursive: true, force: true });
  const driver = o.driver ?? 'process';
  const shape = reportShape(o, driver);
  const serverFlags = [...(o.serverFlags ?? []), ...(o.secure ? secureFlags(o, `${clusterDir}-secure`) : [])];
  const cluster = await planVerifyCluster({ driver, baseDir: clusterDir, tservers: 3, ...(o.masters ? { masters: o.masters } : {}), hostBase: o.hostBase, portOffset: o.portOffset, ...(serverFlags.length ? { serverFlags } : {}), log });
  let client: TesseraClient | undefined;
  try {
    await cluster.startAll(CLUSTER_UP_TIMEOUT_MS);
    client = await TesseraClient.connect({ ...cluster.connectOptions(), timeoutMs: 10_000, rpcSingleCallTimeoutMs: VERIFY_SINGLE_CALL_TIMEOUT_MS, ...(o.deferTxnWrites === true ? { deferTxnWrites: true } : {}) });
    const w = makeWorkload(o.workload, client, { ...(o.registerWrites ? { registerWrites: o.registerWrites } : {}), ...(o.isolation ? { isolation: o.isolation } : {}), ...(o.txnProtocol ? { txnProtocol: o.txnProtocol } : {}), ...(o.clientCrash ? { clientCrash: true } : {}) });
    if (typeof w === 'string') return { ...unavailableReport(o.workload, w, o.seed, 0), ...shape };
    try {
      await w.setup(client);
    } catch (e) {
      if (o.workload === 'bank' || o.workload === 'append') return { ...unavailableReport(o.workload, `${o.workload}: setup failed: ${(e as Error).message}`, o.seed, 0), ...shape };
      throw e;
    }
    const ops = await runOpsUnderNemesis(o, cluster, client, w, log);
    const { recorder, nemesis, t0, midHt } = ops;
    const { convergence, past, pastAt, drain } = await settleAndCheckReplicas(o, cluster, client, w, ops, log);
    makeDirs(o.dir, 'report directory');
    fs.writeFileSync(path.join(o.dir, `history-${o.workload}.json`), JSON.stringify({ workload: o.workload, seed: o.seed, driver, faults: nemesis.windows, history: recorder.ops }));
    return { ...judge(o.workload, recorder.ops, nemesis.windows, withDrain(withConvergence(withConvergence(w.check(recorder.ops), convergence), past, pastAt), drain), o.seed, Date.now() - t0), convergence, convergenceMidRun: { ...past, readHt: String(midHt) }, drain, ...shape };
  } finally {
    await client?.close().catch(() => undefined);
    await cluster.destroy(o.keepData ?? false);
  }
}
