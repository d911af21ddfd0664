/**
 * The tablet-level simulator (docs/architecture.md, "Simulation"): three production TabletPeers —
 * RaftGroup, RawNode, the apply pipeline, DocDB on the in-memory engine, the in-memory Raft log with
 * its power-loss model — in one process, wired by a seeded network that delays, reorders, drops and
 * partitions their Raft messages (each message goes through the wire codec, so no object is shared),
 * under a simulated wall clock. A seed drives writes, partitions, leadership transfers and restarts
 * that lose the log's unsynced tail; after healing, every acknowledged write must be on every replica,
 * nothing must be there that was never written, and the replicas' visible contents must be equal.
 *
 * Unlike test/sim's Raft simulator this runs the real async code paths, so a seed replays the same
 * faults and requests but not always the same interleaving of promise callbacks.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ManualClock } from '../../common/clock';
import { Flags } from '../../common/flags';
import { HybridClock } from '../../common/hybrid-clock';
import { silentLogger } from '../../common/log';
import { partitionHash } from '../../common/partition-hash';
import { SeededRng } from '../../common/rng';
import type { DocKey } from '../../docdb/doc-db-api';
import { DocDb } from '../../docdb/doc-db';
import { MemoryEngine } from '../../docdb/memory-engine';
import { NodeId } from '../../common/ids';
import { decodeMessage, encodeMessage, MemoryLogStorage, RawNode, type Message } from '../../raft';
import { TabletPeer } from '../../tserver/tablet/tablet-peer';
import type { TabletMeta } from '../../tserver/tablet/tablet-meta';
import { SnapshotSessions } from '../../tserver/tablet/snapshot-sessions';

export interface TabletSimOptions {
  seed: number;
  /** Simulated ticks of the fault phase (one Raft tick each). */
  steps: number;
  trace?: (line: string) => void;
}

export interface TabletSimResult {
  seed: number;
  steps: number;
  writesAcked: number;
  writesFailed: number;
  partitions: number;
  restarts: number;
  transfers: number;
  /** Leader changes seen (a replica became leader). */
  elections: number;
  messagesDropped: number;
  /** Log compactions that dropped entries, and snapshots a replica fetched because of them. */
  logGcs: number;
  snapshots: number;
}

export class TabletSimFailure extends Error {
  constructor(seed: number, what: string) {
    super(`tablet sim seed ${seed}: ${what} (replay: TABLET_SIM_SEED=${seed} npx vitest run test/sim/tablet-sim.test.ts)`);
  }
}

const UUIDS = ['r0', 'r1', 'r2'] as const;
const TICK_MS = 50;

function simMeta(): TabletMeta {
  return {
    tabletId: 'sim1',
    tableId: 'tbl',
    tableName: 'sim',
    schema: {
      columns: [
        { name: 'id', id: 0, type: 'int64', nullable: false },
        { name: 'v', id: 1, type: 'int64', nullable: true },
      ],
      hashColumns: ['id'],
      rangeColumns: [],
    },
    partition: { start: 0, end: 65536 },
    peers: UUIDS.map((uuid) => ({ uuid, rpcAddress: `sim:${uuid}`, memberType: 'VOTER' as const })),
    schemaVersion: 0,
  };
}

const keyOf = (i: number): DocKey => ({ hash: partitionHash([BigInt(i)]), hashed: [BigInt(i)], range: [] });

/** One replica: its durable parts outlive restarts (the log keeps only what it synced). */
interface Replica {
  uuid: string;
  dir: string;
  log: MemoryLogStorage;
  engines: Map<string, MemoryEngine>;
  peer: TabletPeer | undefined;
  /** Restarting: no ticks, no messages. */
  down: boolean;
}

interface InFlight {
  deliverAt: number;
  to: string;
  bytes: Uint8Array;
}

export async function runTabletSeed(o: TabletSimOptions): Promise<TabletSimResult> {
  const rng = new SeededRng(o.seed);
  const wall = new ManualClock(1_700_000_000_000_000);
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-tablet-sim-'));
  const flags = new Flags();
  const r: TabletSimResult = { seed: o.seed, steps: 0, writesAcked: 0, writesFailed: 0, partitions: 0, restarts: 0, transfers: 0, elections: 0, messagesDropped: 0, logGcs: 0, snapshots: 0 };
  const trace = o.trace ?? (() => undefined);
  const replicas: Replica[] = UUIDS.map((uuid) => ({ uuid, dir: path.join(base, uuid), log: new MemoryLogStorage({ trackDurability: true }), engines: new Map(), peer: undefined, down: false }));
  const net: InFlight[] = [];
  const sessions = new SnapshotSessions();
  /** Replica index cut off from the others until `until` (step), if any. */
  let cut: { index: number; until: number } | undefined;
  let step = 0;
  const failures: string[] = [];

  const send = (from: string) => (msgs: Message[]): void => {
    for (const m of msgs) {
      const to = String(m.to);
      const fi = UUIDS.indexOf(from as (typeof UUIDS)[number]);
      const ti = UUIDS.indexOf(to as (typeof UUIDS)[number]);
      if (cut && (cut.index === fi || cut.index === ti)) {
        r.messagesDropped++;
        continue;
      }
      if (rng.next() < 0.02) {
        r.messagesDropped++;
        continue;
      }
      // Delivered 0-3 steps later: reordering between messages comes with it.
      net.push({ deliverAt: step + Math.floor(rng.next() * 4), to, bytes: encodeMessage(m) });
    }
  };

  const open = async (rep: Replica): Promise<void> => {
    const clock = new HybridClock(wall);
    rep.peer = await TabletPeer.open({
      dir: rep.dir,
      meta: simMeta(),
      selfUuid: rep.uuid,
      flags,
      clock,
      log: silentLogger(),
      rng: new SeededRng(o.seed * 31 + UUIDS.indexOf(rep.uuid as (typeof UUIDS)[number])),
      send: send(rep.uuid),
      openLogStorage: () => Promise.resolve(rep.log),
      openEngine: (d) => {
        const prev = rep.engines.get(d);
        const e = prev ? prev.reopen() : new MemoryEngine();
        rep.engines.set(d, e);
        return Promise.resolve(e);
      },
      openDocDb: (regular, intents) => DocDb.open({ regular, intents, flags }),
      newRaftCore: (opts) => new RawNode(opts),
      // Remote bootstrap from the source replica's own databases, chunk by chunk, as the tserver serves it.
      fetchSnapshot: async (desc, onChunk) => {
        const src = replicas.find((x) => x.uuid === desc.sourceUuid);
        if (!src?.peer || src.down) throw new Error(`snapshot source ${desc.sourceUuid} is down`);
        r.snapshots++;
        trace(`step ${step}: ${rep.uuid} fetches a snapshot at index ${desc.index} from ${desc.sourceUuid}`);
        const id = sessions.open(desc.tabletId, src.peer.engines());
        for (let i = 0; i < 10_000; i++) {
          const c = await sessions.next(id, desc.tabletId, 64 * 1024);
          if (c.pairs.length > 0) await onChunk(c.db, c.pairs);
          if (c.done) return;
        }
        throw new Error('snapshot: too many chunks');
      },
      peerAddress: (uuid) => `sim:${uuid}`,
      onLeaderChange: (_t, c) => {
        if (c.isLeader) {
          r.elections++;
          trace(`step ${step}: ${rep.uuid} leads term ${c.term}`);
        }
      },
      onFatal: (_t, e) => failures.push(`${rep.uuid} failed: ${e instanceof Error ? e.message : String(e)}`),
    });
  };

  const acked = new Map<number, bigint>();
  const attempted = new Map<number, bigint>();
  let nextKey = 1;
  const pending: Array<Promise<void>> = [];
  const leader = (): Replica | undefined => replicas.find((x) => !x.down && x.peer?.isLeaderReady());

  const write = (rep: Replica): void => {
    const k = nextKey++;
    const v = BigInt(rng.int(1_000_000));
    attempted.set(k, v);
    pending.push(
      rep.peer!.write({ ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: keyOf(k), columns: [{ columnId: 1, value: v }] } }], deadlineMs: 5_000 }).then(
        () => {
          acked.set(k, v);
          r.writesAcked++;
        },
        () => {
          r.writesFailed++;
        },
      ),
    );
  };

  const restart = async (rep: Replica): Promise<void> => {
    rep.down = true;
    r.restarts++;
    trace(`step ${step}: restart ${rep.uuid} (unsynced log tail lost)`);
    const p = rep.peer!;
    rep.peer = undefined;
    await p.stop();
    rep.log.crash();
    await open(rep);
    rep.down = false;
  };

  const deliver = (): void => {
    for (let i = 0; i < net.length; ) {
      const m = net[i]!;
      if (m.deliverAt > step) {
        i++;
        continue;
      }
      net.splice(i, 1);
      const rep = replicas.find((x) => x.uuid === m.to)!;
      if (rep.down || !rep.peer) {
        r.messagesDropped++;
        continue;
      }
      rep.peer.step(decodeMessage(m.bytes));
    }
  };

  /** One simulated tick: the clock, every live replica's tick, due messages, then the promises run. */
  const tick = async (): Promise<void> => {
    step++;
    wall.advanceMs(TICK_MS);
    for (const x of replicas) if (!x.down) x.peer?.tick();
    deliver();
    await new Promise((res) => setImmediate(res));
  };

  try {
    for (const x of replicas) await open(x);
    for (; r.steps < o.steps; r.steps++) {
      if (cut && step >= cut.until) {
        trace(`step ${step}: heal ${UUIDS[cut.index]}`);
        cut = undefined;
      }
      // One event per step at most, each in its own band of the dice (no band borrows another's).
      const dice = rng.next();
      const l = leader();
      if (dice < 0.3) {
        if (l) write(l);
      } else if (dice < 0.31) {
        if (!cut) {
          cut = { index: rng.int(3), until: step + 20 + rng.int(80) };
          r.partitions++;
          trace(`step ${step}: cut ${UUIDS[cut.index]} off until step ${cut.until}`);
        }
      } else if (dice < 0.313) {
        await restart(replicas[rng.int(3)]!);
      } else if (dice < 0.323) {
        // A replica compacts its log (keeping the last few entries): a lagging follower then needs a snapshot.
        const x = replicas[rng.int(3)]!;
        if (!x.down && x.peer) {
          const dropped = await x.peer.gcLog(3).catch(() => 0);
          if (dropped > 0) {
            r.logGcs++;
            trace(`step ${step}: ${x.uuid} compacted its log (${dropped})`);
          }
        }
      } else if (dice < 0.328 && l) {
        const to = UUIDS.filter((u) => u !== l.uuid)[rng.int(2)]!;
        r.transfers++;
        trace(`step ${step}: transfer leadership ${l.uuid} -> ${to}`);
        l.peer!.transferLeadership(NodeId(to)).catch(() => undefined);
      }
      await tick();
      if (failures.length > 0) throw new TabletSimFailure(o.seed, failures.join('; '));
    }
    // Heal and let every replica catch up: bounded, then the checks.
    cut = undefined;
    for (let i = 0; i < 2_000 && !(await settled(replicas, pending)); i++) await tick();
    await Promise.all(pending);
    await check(o.seed, replicas, acked, attempted);
    return r;
  } finally {
    for (const x of replicas) await x.peer?.stop().catch(() => undefined);
    fs.rmSync(base, { recursive: true, force: true });
  }
}

/** Every write answered, a leader, and all three replicas applied the same last index. */
async function settled(replicas: readonly Replica[], pending: ReadonlyArray<Promise<void>>): Promise<boolean> {
  const answered = await Promise.race([Promise.all(pending).then(() => true), new Promise<boolean>((res) => setImmediate(() => res(false)))]);
  if (!answered) return false;
  const ls = replicas.filter((x) => x.peer?.isLeaderReady());
  if (ls.length !== 1) return false;
  const last = ls[0]!.peer!.raftGroup().status().commit;
  return replicas.every((x) => x.peer && x.peer.raftGroup().appliedOpId().index >= last);
}

async function check(seed: number, replicas: readonly Replica[], acked: ReadonlyMap<number, bigint>, attempted: ReadonlyMap<number, bigint>): Promise<void> {
  const sums: string[] = [];
  for (const x of replicas) {
    const db = x.peer!.db();
    for (const [k, v] of acked) {
      const row = await db.getRow(keyOf(k), { readHt: x.peer!.hybridNow(), resolveStatus: () => Promise.resolve({ status: 'PENDING' as const }) });
      if (row?.columns.get(1) !== v) throw new TabletSimFailure(seed, `${x.uuid} lost acknowledged write ${k}=${v} (has ${String(row?.columns.get(1))})`);
    }
    const cs = await x.peer!.visibleChecksum();
    sums.push(cs.sha256);
    if (cs.rows > attempted.size) throw new TabletSimFailure(seed, `${x.uuid} holds ${cs.rows} rows but only ${attempted.size} were ever written`);
  }
  if (new Set(sums).size !== 1) throw new TabletSimFailure(seed, `replicas differ after healing: ${sums.map((s, i) => `${replicas[i]!.uuid} ${s.slice(0, 12)}`).join(', ')}`);
}
