/**
 * The cluster an experiment runs on: a 3-node lab of the real servers (1 master on n0) under the
 * process driver (default) or the Docker driver, a client on this machine, and a table
 * `exp (id int64, v string)` in 3 tablets; torn down afterwards unless kept. Experiments speak only
 * the ClusterDriver interface. Under Docker the servers advertise lab-network names (n1:9100), so the
 * client dials them through the published ports (labConnectOptions: addressMap).
 * Also samples memtable bytes per node over time for the report's chart.
 */
import * as path from 'node:path';
import { TesseraClient } from '../../client/tessera-client';
import { type ClusterDriver, labConnectOptions } from '../cluster-driver';
import { defaultSpec, type NodeName } from '../cluster-spec';
import { newDriver } from '../open-lab';
import { leadersByTablet, replicasViaDriver, waitCaughtUp, type ReplicaRow } from '../tablet-view';
import { waitUntil } from '../wait-until';
import type { Check, ExperimentOptions } from './experiment';
import type { ChartSeries } from './report';
import type { Ack } from './write-load';

export const EXPERIMENT_TABLE = 'exp';
/** Samples kept per node (the sampler stops adding beyond; a run is minutes, not hours). */
const SAMPLES_MAX = 10_000;

export interface ExperimentLab {
  driver: ClusterDriver;
  client: TesseraClient;
  t0: number;
  /** ms since t0. */
  now(): number;
  log(line: string): void;
  timeline: string[];
  startMemSampler(intervalMs: number): void;
  /** The leader of each of the experiment table's tablets, once every one has one (bounded wait). */
  leaders(): Promise<Array<[string, { node: NodeName; row: ReplicaRow }]>>;
  memSeries(): ChartSeries[];
  close(): Promise<void>;
}

/** Samples memtable bytes of the experiment table per node, for the report's chart. */
class MemSampler {
  private readonly series = new Map<string, Array<[number, number]>>();
  private timer: NodeJS.Timeout | undefined;
  private sampling = false;

  constructor(
    private readonly driver: ClusterDriver,
    private readonly t0: number,
  ) {}

  /** Sample every intervalMs (a sample still in flight makes the next tick skip). */
  start(intervalMs: number): void {
    this.timer = setInterval(() => {
      if (this.sampling) return;
      this.sampling = true;
      void replicasViaDriver(this.driver)
        .then((all) => {
          const at = performance.now() - this.t0;
          for (const n of all) {
            if (!n.tablets) continue;
            const bytes = n.tablets.filter((t) => t.table === EXPERIMENT_TABLE).reduce((s, t) => s + t.regulardb.memtableBytes + t.intentsdb.memtableBytes, 0);
            const pts = this.series.get(n.node) ?? [];
            if (pts.length < SAMPLES_MAX) pts.push([at, bytes]);
            this.series.set(n.node, pts);
          }
        })
        .finally(() => (this.sampling = false));
    }, intervalMs);
  }

  /** The samples as chart series, one per node in name order. */
  memSeries(): ChartSeries[] {
    return [...this.series.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([n, points]) => ({ name: `${n} memtable bytes`, points }));
  }

  /** Stop sampling. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}

/** The leader of each of the experiment table's tablets, once every one has one (bounded wait). */
function experimentLeaders(driver: ClusterDriver): Promise<Array<[string, { node: NodeName; row: ReplicaRow }]>> {
  return waitUntil(
    async () => {
      // Only the experiment's table: the system status tablets (transactions) have leaders too.
      const mine = [...leadersByTablet(await replicasViaDriver(driver)).entries()].filter(([, x]) => x.row.table === EXPERIMENT_TABLE);
      return mine.length >= 3 ? mine : undefined;
    },
    { timeoutMs: 20_000, what: 'a leader for every tablet' },
  );
}

/** Connect a client and create the experiment table; on failure close the client and take the lab down. */
async function connectAndCreateTable(driver: ClusterDriver, log: (line: string) => void): Promise<TesseraClient> {
  let client: TesseraClient | undefined;
  try {
    client = await TesseraClient.connect({ ...labConnectOptions(driver.addresses()), timeoutMs: 30_000 });
    await client.createTable({ name: EXPERIMENT_TABLE, columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 3 });
    log(`table ${EXPERIMENT_TABLE} created (3 tablets, RF 3)`);
  } catch (e) {
    await client?.close().catch(() => undefined);
    await driver.down().catch(() => undefined);
    throw e;
  }
  return client;
}

export async function openExperimentLab(o: ExperimentOptions, name: string, tserverFlags: Record<string, string> = {}): Promise<ExperimentLab> {
  const kind = o.driver ?? 'process';
  const spec = defaultSpec({
    baseDir: path.join(o.baseDir, `lab-${name}`),
    driver: kind,
    nodes: 3,
    masters: 1,
    serverEntry: o.serverEntry,
    hostBase: o.hostBase,
    portOffset: o.portOffset,
    tserverFlags: { heartbeat_interval_ms: '200', ...tserverFlags },
    healthTimeoutMs: 60_000,
  });
  const t0 = performance.now();
  const timeline: string[] = [];
  const log = (line: string): void => {
    const l = `${(performance.now() - t0).toFixed(0).padStart(7)} ms  ${line}`;
    timeline.push(l);
    o.progress(l);
  };
  // Docker: image build and container steps go to the progress lines (the first build takes a while).
  const driver = newDriver(kind, { onProgress: (l) => o.progress(l) });
  log(`starting a 3-node ${kind} lab in ${spec.baseDir}`);
  await driver.up(spec);
  log(`lab up (${kind} driver)`);
  const sampler = new MemSampler(driver, t0);
  const c = await connectAndCreateTable(driver, log);
  return {
    leaders: () => experimentLeaders(driver),
    driver,
    client: c,
    t0,
    now: () => performance.now() - t0,
    log,
    timeline,
    startMemSampler(intervalMs: number): void {
      sampler.start(intervalMs);
    },
    memSeries: () => sampler.memSeries(),
    async close(): Promise<void> {
      sampler.stop();
      await c.close().catch(() => undefined);
      if (o.keep) log(`lab kept in ${spec.baseDir} (tessera lab down --base_dir ${spec.baseDir})`);
      else await driver.down();
    },
  };
}

/**
 * After a heal: wait until every replica of the experiment table on `node` applied as far as its
 * leader, log it, push the check `name` and the figure catchUpAfterHealMs (timed from the call).
 */
export async function checkCaughtUpAfterHeal(lab: ExperimentLab, node: NodeName, name: string, timeoutMs: number, checks: Check[], figures: Record<string, number | string>): Promise<void> {
  const healAt = lab.now();
  let caughtUp = true;
  try {
    await waitCaughtUp(lab.driver, node, timeoutMs, EXPERIMENT_TABLE);
  } catch {
    caughtUp = false;
  }
  const catchUpMs = lab.now() - healAt;
  lab.log(caughtUp ? `${node} caught up ${catchUpMs.toFixed(0)} ms after heal` : `${node} did not catch up`);
  checks.push({ name, ok: caughtUp, detail: caughtUp ? `${catchUpMs.toFixed(0)} ms after heal` : `not within ${timeoutMs} ms` });
  if (caughtUp) figures['catchUpAfterHealMs'] = Math.round(catchUpMs);
}

/**
 * Read the experiment table back and push the check "no acknowledged write is lost": every write the
 * load saw acknowledged must be there with its value. Returns how many rows were read.
 */
export async function checkNoAckedWriteLost(lab: ExperimentLab, acks: readonly Ack[], checks: Check[]): Promise<number> {
  const rows = await lab.client.table(EXPERIMENT_TABLE).scan({ timeoutMs: 60_000 });
  const stored = new Map(rows.map((r) => [r['id'] as bigint, r['v'] as string]));
  const lost = acks.filter((a) => stored.get(a.id) !== a.value);
  lab.log(`read back ${stored.size} rows; ${lost.length} acknowledged writes missing`);
  checks.push({ name: 'no acknowledged write is lost', ok: lost.length === 0, detail: lost.length === 0 ? `all ${acks.length} acknowledged writes read back` : `${lost.length} missing, e.g. id ${String(lost[0]!.id)}` });
  return stored.size;
}
