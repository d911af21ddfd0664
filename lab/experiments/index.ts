/**
 * The experiment registry: `tessera lab experiment <name>` looks names up here. To add one, write
 * `lab/experiments/<name>.ts` exporting an ExperimentFn and add an entry below; runExperiment does
 * the report and the verdict.
 */
import type { ExperimentDef, ExperimentOptions, ExperimentResult } from './experiment';
import { durability } from './durability';
import { intentsApply } from './intents-apply';
import { leaderFailover } from './leader-failover';
import { mvccHistory } from './mvcc-history';
import { hbaseVersions } from './hbase-versions';
import { onlineSchemaChange } from './online-schema-change';
import { partialPartition } from './partial-partition';
import { partitionMinority } from './partition-minority';
import { pausedLeader } from './paused-leader';
import { pausedStatusLeader } from './paused-status-leader';
import { replicaDivergence } from './replica-divergence';
import { slowLeader } from './slow-leader';
import { rowLocks } from './row-locks';
import { snapshotIsolation } from './snapshot-isolation';
import { txnProtocols } from './txn-protocols';
import { percolatorIndex } from './percolator-index';
import { tabletSplit } from './tablet-split';
import { waitOnConflict } from './wait-on-conflict';
import { writeReport } from './report';

export * from './experiment';
export * from './report';

export const EXPERIMENTS: readonly ExperimentDef[] = [
  { name: 'intents-apply', description: 'the defining experiment: a delayed apply on n0; intents on every replica while open, n1/n2 apply at commit, n0 after the delay, equal RegularDBs at the end (--rows, --row-bytes, --delay-ms)', run: (o) => intentsApply(o.params)(o) },
  { name: 'leader-failover', description: 'kill -9 a tablet leader during a write load: time to a new leader, no acknowledged write lost, catch-up after restart', run: leaderFailover },
  { name: 'partition-minority', description: 'cut one node off during a write load (--hold-ms, default 5 s; past 15 s under Docker, RPC keepalive closes the dead connections): the majority keeps serving, the minority catches up after heal', run: partitionMinority },
  { name: 'partial-partition', description: 'a tablet leader and one follower stop hearing each other while the third node reaches both (a bridge) under a write load: the follower\'s pre-votes are refused by the node that still hears the leader, so no tablet changes leader or term; writes go on; the follower catches up after heal', run: partialPartition },
  { name: 'wait-on-conflict', description: 'a hot counter incremented by 8 clients with serializable read-modify-writes, under fail-on-conflict and then enable_wait_queues: no increment lost either way; commits, failures by code and latency compared', run: waitOnConflict },
  { name: 'online-schema-change', description: 'ALTER TABLE ADD COLUMN under a write load from two clients (one never told), with n2 paused: no write fails, the uninformed client writes the new column, n2 takes the change when Raft catches it up', run: onlineSchemaChange },
  { name: 'paused-leader', description: 'INSERTs with a 5 s deadline while the tserver leading the most tablets is paused for 8 s: each is resent as the same retryable request, none fails or inserts twice, writes go on without the paused leader', run: pausedLeader },
  { name: 'paused-status-leader', description: 'short transactions while the tserver leading the status tablet is paused for 10 s: each commit sent to it is settled by its successor, which proves it never committed (TXN_ABORTED, never "outcome unknown"); transactions go on; the table holds exactly the committed rows', run: pausedStatusLeader },
  { name: 'mvcc-history', description: 'old versions kept for timestamp_history_retention_interval_sec (5 s here), then collected by every replica on its own: a snapshot reads them, then fails SNAPSHOT_TOO_OLD once the history floor passed it; an open transaction holds the floor of its tablet; a dropped column\'s values go too; the latest data is unchanged', run: mvccHistory },
  { name: 'hbase-versions', description: "HBase's cell model: a family with VERSIONS=3, MIN_VERSIONS=1, TTL=10 s, KEEP_DELETED_CELLS=true; five timestamped versions and a column delete; raw, as-of and time-range reads checked cell by cell before and after a forced compaction and after the TTL (docs/cells.md)", run: hbaseVersions },
  { name: 'slow-leader', description: 'a slow disk (TEST_inject_sleep_before_applying_write_batch_ms=800) on a node leading one tablet, under a write load with leader balancing held: writes to its tablet wait, the others do not, and its /rpcz lists the waiting writes; leader_stepdown moves its leadership away and every write is fast while it still applies late as a follower; cleared, it catches up, nothing acknowledged lost', run: slowLeader },
  { name: 'replica-divergence', description: 'one follower silently stores a wrong value (TEST_corrupt_tablet_replica): clients read right values, the replica convergence check (tessera admin check_replicas) names the tablet and the follower; failing that replica makes the master re-create it from a healthy one, and all replicas agree again', run: replicaDivergence },
  { name: 'row-locks', description: 'why HBase removed row locks, with leases and fencing tokens: clients lock rows and stall; writers of those rows fail ROW_LOCKED or wait (holding nothing, bounded) while writers of other rows carry on; the leases run out by themselves and the waiters write; a holder paused past its lease is refused FENCED when it writes late', run: rowLocks },
  { name: 'durability', description: 'per-table durability, the hflush-vs-hsync point: for ASYNC, FLUSH and FSYNC tables, a write load hit by kill -9 of every tserver at once and by a simulated power loss of every tserver at once; acknowledged writes lost per level and fault, and each level\'s write rate (--writes, --load-ms, --writers, --interval-ms)', run: (o) => durability(o.params)(o) },
  { name: 'txn-protocols', description: 'the same bank through YugabyteDB-style and Percolator transactions on one cluster: throughput, latency and failures side by side; then a client dies mid-commit in each (YugabyteDB-style: intents written, heartbeats stop; Percolator: after prewrite, after the primary\'s commit) and another client wants the same rows: how long it waits, who cleans up, nothing half-visible', run: txnProtocols },
  { name: 'percolator-index', description: 'the Percolator paper\'s incremental indexing in miniature: pages arrive one Percolator transaction each; observer worker processes dedupe them by content hash (highest PageRank wins) and invert their links, while a worker is killed -9 twice and a tserver paused; then exactly one canonical page per hash, the highest-ranked, every link inverted exactly once, no hint or lock left', run: percolatorIndex },
  { name: 'tablet-split', description: 'automatic tablet splitting by size: a range table starting as one tablet, a small split threshold, writers of random keys; the table grows to at least 8 tablets while the load runs, no write fails or is lost, replicas converge (--threshold-bytes)', run: (o) => tabletSplit(o.params)(o) },
  { name: 'snapshot-isolation', description: 'two clients interleaved by hand: a lost update refused, first committer wins, a stable snapshot, the write skew snapshot isolation allows, and serializable isolation refusing that write skew and a phantom', run: snapshotIsolation },
];

export function findExperiment(name: string): ExperimentDef | undefined {
  return EXPERIMENTS.find((e) => e.name === name);
}

/** Runs one experiment and writes its Markdown report under o.baseDir/experiments/. */
export async function runExperiment(def: ExperimentDef, o: ExperimentOptions): Promise<ExperimentResult> {
  const r = await def.run(o);
  r.reportPath = writeReport(o.baseDir, r);
  return r;
}
