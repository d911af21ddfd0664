/**
 * `npm run bench:raft`: Raft replication throughput over file WALs (issue 3, "Figures").
 *
 * Three in-process RawNodes, each with a FileLogStorage in its own temp directory (durable_wal_write
 * on: every Ready with mustSync waits for an fdatasync), messages handed from node to node in memory.
 * A fixed number of clients (1, 16, 128) each keep one 100-byte proposal outstanding on the leader:
 * propose, wait until the leader sees it committed, propose again. Reports committed proposals per
 * second, mean latency, and fsyncs per committed entry (all three nodes' log fdatasyncs, and the
 * metadata-file fsyncs, divided by committed proposals).
 *
 * Then the WAL alone: C concurrent writers each append one 100-byte entry and await sync(), with
 * log_preallocate_segments on and off (alternating): records/s, fsyncs and this process's CPU per
 * record, and p50/p99 of append → sync() resolved.
 *
 * Last, what a hand-off to libuv's thread pool costs: one small write + fdatasync at a time, the
 * fdatasync on the thread pool (as the WAL does it) or blocking the event loop (alternating): calls/s
 * and this process's CPU per call. The difference is the two thread wake-ups of the round trip.
 *
 * Options: --seconds=N per run (default 3), --wal-only, --raft-only.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { NodeId } from '../common/ids';
import { silentLogger } from '../common/log';
import { SeededRng } from '../common/rng';
import { FileLogStorage, LOG_PREALLOCATE_SEGMENTS, RawNode, type Entry, type Message } from '../raft';
import { Flags } from '../common/flags';

const PAYLOAD_BYTES = 100;
const CONCURRENCY = [1, 16, 128];
const TICK_MS = 20;
/** Ready rounds one pump handles before yielding to the event loop. */
const ROUNDS_PER_PUMP_MAX = 64;

interface Pending {
  term: number;
  resolve: () => void;
}

class BenchNode {
  readonly node: RawNode;
  private pumping = false;
  private again = false;
  /** Leader-side proposals waiting for commit, by index. */
  readonly pending = new Map<number, Pending>();
  stopped = false;

  constructor(
    readonly id: NodeId,
    readonly storage: FileLogStorage,
    private readonly deliver: (m: Message) => void,
    seed: number,
  ) {
    this.node = new RawNode({ id, storage, rng: new SeededRng(seed), electionTicks: 10, heartbeatTicks: 1 });
  }

  schedule(): void {
    if (this.pumping) {
      this.again = true;
      return;
    }
    void this.pump();
  }

  /** The host loop: persist (and fsync) before sending, then hand committed entries over, then advance. */
  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      do {
        this.again = false;
        for (let rounds = 0; rounds < ROUNDS_PER_PUMP_MAX && !this.stopped && this.node.hasReady(); rounds++) {
          const rd = this.node.ready();
          if (rd.snapshot) this.storage.applySnapshot(rd.snapshot);
          if (rd.entries.length > 0) this.storage.append(rd.entries);
          if (rd.hardState) this.storage.setHardState(rd.hardState);
          if (rd.mustSync) await this.storage.sync();
          for (const m of rd.messages) this.deliver(m);
          for (const e of rd.committedEntries) this.committed(e);
          this.node.advance(rd);
        }
      } while (this.again && !this.stopped);
    } finally {
      this.pumping = false;
    }
    if (!this.stopped && this.node.hasReady()) setImmediate(() => this.schedule());
  }

  private committed(e: Entry): void {
    const p = this.pending.get(e.index);
    if (!p) return;
    this.pending.delete(e.index);
    if (p.term === e.term) p.resolve();
  }

  /** Propose and resolve once committed; false when this node cannot take it (not leader). */
  propose(data: Uint8Array): Promise<boolean> {
    const r = this.node.propose(data);
    if (!r.ok) return Promise.resolve(false);
    const done = new Promise<boolean>((resolve) => this.pending.set(r.index, { term: r.term, resolve: () => resolve(true) }));
    this.schedule();
    return done;
  }
}

interface RaftFigures {
  concurrency: number;
  committed: number;
  seconds: number;
  perSecond: number;
  meanLatencyMs: number;
  logFsyncsPerEntry: number;
  leaderLogFsyncsPerEntry: number;
  metaFsyncsPerEntry: number;
}

// Long by design (docs/conventions.md): a benchmark's run in the order its report prints, phase after phase.
async function benchRaft(concurrency: number, seconds: number, root: string): Promise<RaftFigures> {
  const ids = ['n1', 'n2', 'n3'] as NodeId[];
  const nodes = new Map<NodeId, BenchNode>();
  const deliver = (m: Message): void => {
    // In-memory hand-off, on a later microtask so no node is re-entered from its own pump.
    queueMicrotask(() => {
      const to = nodes.get(m.to);
      if (!to || to.stopped) return;
      to.node.step(m);
      to.schedule();
    });
  };
  for (let k = 0; k < ids.length; k++) {
    const storage = await FileLogStorage.open(path.join(root, `c${concurrency}-${ids[k]}`), { logger: silentLogger() });
    storage.setConfState({ voters: ids, learners: [] });
    await storage.sync();
    nodes.set(ids[k]!, new BenchNode(ids[k]!, storage, deliver, 1000 + k));
  }
  const all = [...nodes.values()];
  const ticker = setInterval(() => {
    for (const n of all) {
      n.node.tick();
      n.schedule();
    }
  }, TICK_MS);

  const first = all[0]!;
  first.node.campaign();
  first.schedule();
  const leader = async (): Promise<BenchNode> => {
    for (let i = 0; i < 500; i++) {
      const l = all.find((n) => n.node.status().role === 'LEADER');
      if (l) return l;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error('no leader elected within 5 s');
  };
  const lead = await leader();
  // Let the leader's no-op commit before measuring.
  await lead.propose(new Uint8Array(PAYLOAD_BYTES));

  const before = all.map((n) => n.storage.stats());
  const payload = new Uint8Array(PAYLOAD_BYTES).fill(7);
  let committed = 0;
  let latencySumMs = 0;
  const deadline = Date.now() + seconds * 1000;
  const started = process.hrtime.bigint();
  const client = async (): Promise<void> => {
    while (Date.now() < deadline) {
      const t0 = process.hrtime.bigint();
      const ok = await lead.propose(payload);
      if (!ok) throw new Error('leader refused a proposal (leadership changed during the bench)');
      latencySumMs += Number(process.hrtime.bigint() - t0) / 1e6;
      committed++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, () => client()));
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  const after = all.map((n) => n.storage.stats());

  clearInterval(ticker);
  for (const n of all) n.stopped = true;
  for (const n of all) await n.storage.close();

  let logFsyncs = 0;
  let metaWrites = 0;
  for (let k = 0; k < all.length; k++) {
    logFsyncs += after[k]!.logFsyncs - before[k]!.logFsyncs;
    metaWrites += after[k]!.metaWrites - before[k]!.metaWrites;
  }
  const li = all.indexOf(lead);
  return {
    concurrency,
    committed,
    seconds: elapsed,
    perSecond: committed / elapsed,
    meanLatencyMs: latencySumMs / Math.max(1, committed),
    logFsyncsPerEntry: logFsyncs / Math.max(1, committed),
    leaderLogFsyncsPerEntry: (after[li]!.logFsyncs - before[li]!.logFsyncs) / Math.max(1, committed),
    // A metadata replacement is two fsyncs (temp file + directory).
    metaFsyncsPerEntry: (2 * metaWrites) / Math.max(1, committed),
  };
}

interface WalFigures {
  concurrency: number;
  preallocate: boolean;
  records: number;
  perSecond: number;
  fsyncsPerRecord: number;
  cpuMicrosPerRecord: number;
  syncP50Ms: number;
  syncP99Ms: number;
}

async function benchWal(concurrency: number, preallocate: boolean, seconds: number, root: string): Promise<WalFigures> {
  const flags = new Flags();
  flags.set(LOG_PREALLOCATE_SEGMENTS, preallocate);
  const storage = await FileLogStorage.open(path.join(root, `wal-c${concurrency}-${preallocate ? 'prealloc' : 'grow'}`), { logger: silentLogger(), flags });
  const payload = new Uint8Array(PAYLOAD_BYTES).fill(9);
  let next = 1;
  let records = 0;
  const latencies: number[] = [];
  const deadline = Date.now() + seconds * 1000;
  const cpu0 = process.cpuUsage();
  const started = process.hrtime.bigint();
  const writer = async (): Promise<void> => {
    while (Date.now() < deadline) {
      const t0 = process.hrtime.bigint();
      storage.append([{ index: next++, term: 1, type: 'normal', data: payload }]);
      await storage.sync();
      latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
      records++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, () => writer()));
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  const st = storage.stats();
  await storage.close();
  latencies.sort((a, b) => a - b);
  const at = (q: number): number => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? Number.NaN;
  return {
    concurrency,
    preallocate,
    records,
    perSecond: records / elapsed,
    fsyncsPerRecord: st.logFsyncs / Math.max(1, records),
    cpuMicrosPerRecord: (cpu.user + cpu.system) / Math.max(1, records),
    syncP50Ms: at(0.5),
    syncP99Ms: at(0.99),
  };
}

interface HandOffFigures {
  onPool: boolean;
  calls: number;
  perSecond: number;
  cpuMicrosPerCall: number;
}

/** One 200-byte write + fdatasync at a time for `seconds`: the fdatasync on the thread pool, or on this thread. */
async function benchHandOff(onPool: boolean, seconds: number, root: string): Promise<HandOffFigures> {
  const file = path.join(root, `handoff-${onPool ? 'pool' : 'loop'}.dat`);
  const fd = fs.openSync(file, 'w');
  const buf = Buffer.alloc(200, 7);
  let calls = 0;
  const deadline = Date.now() + seconds * 1000;
  const cpu0 = process.cpuUsage();
  const started = process.hrtime.bigint();
  try {
    while (Date.now() < deadline) {
      fs.writeSync(fd, buf, 0, buf.length, calls * buf.length);
      if (onPool) await new Promise<void>((resolve, reject) => fs.fdatasync(fd, (err) => (err ? reject(err) : resolve())));
      else fs.fdatasyncSync(fd);
      calls++;
    }
  } finally {
    fs.closeSync(fd);
    fs.rmSync(file, { force: true });
  }
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  return { onPool, calls, perSecond: calls / elapsed, cpuMicrosPerCall: (cpu.user + cpu.system) / Math.max(1, calls) };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const secondsArg = args.find((a) => a.startsWith('--seconds='));
  const seconds = secondsArg ? Number(secondsArg.split('=')[1]) : 3;
  if (!Number.isFinite(seconds) || seconds <= 0) throw new Error('--seconds must be a positive number');
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-raft-bench-'));
  try {
    console.log(`raft bench: 3 nodes, file WALs with fsync (durable_wal_write=true), ${PAYLOAD_BYTES}-byte payloads, ${seconds}s per run, node ${process.version}, ${os.cpus().length} cpus, temp dir on ${os.tmpdir()}`);
    if (!args.includes('--wal-only')) {
      console.log('\nRaft (3 in-process RawNodes, in-memory message hand-off), committed proposals:');
      console.log('outstanding  committed/s  mean latency ms  log fsyncs/entry (3 nodes)  leader fsyncs/entry  meta fsyncs/entry');
      for (const c of CONCURRENCY) {
        const f = await benchRaft(c, seconds, root);
        console.log(
          `${String(c).padStart(11)}  ${f.perSecond.toFixed(0).padStart(11)}  ${f.meanLatencyMs.toFixed(2).padStart(15)}  ${f.logFsyncsPerEntry.toFixed(3).padStart(26)}  ${f.leaderLogFsyncsPerEntry.toFixed(3).padStart(19)}  ${f.metaFsyncsPerEntry.toFixed(3).padStart(17)}`,
        );
      }
    }
    if (!args.includes('--raft-only')) {
      console.log('\nWAL alone (append one entry + await sync(), C concurrent writers, group commit; log_preallocate_segments on/off alternating):');
      console.log('writers  preallocate  records/s  fsyncs/record  CPU us/record  sync p50 ms  sync p99 ms');
      for (const c of CONCURRENCY) {
        for (const preallocate of [true, false, true, false]) {
          const f = await benchWal(c, preallocate, seconds, root);
          console.log(
            `${String(c).padStart(7)}  ${String(preallocate).padStart(11)}  ${f.perSecond.toFixed(0).padStart(9)}  ${f.fsyncsPerRecord.toFixed(3).padStart(13)}  ${f.cpuMicrosPerRecord.toFixed(0).padStart(13)}  ${f.syncP50Ms.toFixed(3).padStart(11)}  ${f.syncP99Ms.toFixed(3).padStart(11)}`,
          );
        }
      }
      console.log('\nfdatasync hand-off (one 200-byte write + fdatasync at a time; on the thread pool as the WAL does, or blocking the event loop; alternating):');
      console.log('fdatasync on   calls/s  CPU us/call');
      for (const onPool of [true, false, true, false]) {
        const f = await benchHandOff(onPool, seconds, root);
        console.log(`${(f.onPool ? 'thread pool' : 'event loop').padEnd(12)}  ${f.perSecond.toFixed(0).padStart(8)}  ${f.cpuMicrosPerCall.toFixed(0).padStart(11)}`);
      }
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e instanceof Error ? e.stack ?? e.message : String(e));
    process.exit(1);
  },
);
