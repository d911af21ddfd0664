/**
 * Row operations on ONE tablet replica in this process (real RocksDB and file WAL, no RPC, no
 * followers; docs/rows.md): what the tablet's own path costs per op, apart from the RPCs and Raft
 * rounds the cluster bench (row-ops-bench.ts) measures too. Figures: blind upserts, a blind
 * mutateRow put (no read), increments (read + write), point reads that miss and that hit the row
 * cache, mutateRows of 10 rows against 10 upserts one after the other, lock + increment + unlock.
 * CPU per op is this process's (all threads: RocksDB's pool included). Prints a table; asserts nothing.
 *
 *   node dist/bench/row-ops-inproc-bench.js [--ops 5000] [--rounds 2] [--only TEXT]
 *
 * --only runs the figures whose name contains TEXT (the others' rows are not written either).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SystemClock } from '../common/clock';
import { Flags } from '../common/flags';
import { HybridClock } from '../common/hybrid-clock';
import { silentLogger } from '../common/log';
import { partitionHash } from '../common/partition-hash';
import { SeededRng } from '../common/rng';
import { DocDb, RocksDbEngine, type DocKey } from '../docdb';
import { FileLogStorage, RawNode } from '../raft';
import { rowMethods, tabletServerMethods, type DocKeyPB, type MethodDef, type MutateRowsRequestPB, type WriteRequestPB } from '../rpc';
import { RowService } from '../tserver/row-service';
import { TabletService } from '../tserver/tablet-service';
import type { TabletManager } from '../tserver/tablet-manager';
import { evaluateRowMutations, readsRows, type RowMutation } from '../tserver/tablet/row-ops';
import type { TabletMeta } from '../tserver/tablet/tablet-meta';
import { TabletPeer } from '../tserver/tablet/tablet-peer';

const META: TabletMeta = {
  tabletId: 'bench1',
  tableId: 'tbl',
  tableName: 'bench_rows',
  schema: {
    columns: [
      { name: 'id', id: 0, type: 'int64', nullable: false },
      { name: 'n', id: 1, type: 'int64', nullable: true },
      { name: 'v', id: 2, type: 'string', nullable: true },
    ],
    hashColumns: ['id'],
    rangeColumns: [],
  },
  partition: { start: 0, end: 65536 },
  peers: [{ uuid: 'ts1', rpcAddress: '127.0.0.1:1', memberType: 'VOTER' }],
  schemaVersion: 0,
};

const key = (i: number): DocKey => ({ hash: partitionHash([BigInt(i)]), hashed: [BigInt(i)], range: [] });

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i < 0 ? dflt : Number(process.argv[i + 1]);
  if (!Number.isSafeInteger(v) || v <= 0) throw new Error(`--${name} needs a positive integer`);
  return v;
}

/** `total` ops by `workers` loops; ops/s and this process's CPU µs per op (each op counts `weight`). */
async function measure(total: number, workers: number, op: (i: number) => Promise<unknown>, weight = 1): Promise<{ rate: number; cpuUs: number }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      for (let i = next++; i < total; i = next++) await op(i);
    }),
  );
  const c = process.cpuUsage(c0);
  return { rate: (total * weight) / ((performance.now() - t0) / 1000), cpuUs: (c.user + c.system) / (total * weight) };
}

async function openPeer(dir: string, flags: Flags, clock: HybridClock): Promise<TabletPeer> {
  const p = await TabletPeer.open({
    dir,
    meta: META,
    selfUuid: 'ts1',
    flags,
    clock,
    log: silentLogger(),
    rng: new SeededRng(7),
    send: () => undefined,
    openLogStorage: (d, lo) => FileLogStorage.open(d, { flags, ...(lo ? { durability: lo.durability } : {}) }),
    openEngine: (d) => RocksDbEngine.open(d),
    openDocDb: (regular, intents) => DocDb.open({ regular, intents, flags }),
    newRaftCore: (opts) => new RawNode(opts),
    fetchSnapshot: () => Promise.reject(new Error('no snapshots in this bench')),
    peerAddress: () => '127.0.0.1:1',
    onFatal: (_t, e) => {
      throw e;
    },
  });
  // A lone voter elects itself within a few ticks (bounded).
  for (let i = 0; i < 400 && !p.raftGroup().isLeaderReady(); i++) {
    p.tick();
    await new Promise((r) => setTimeout(r, 2));
  }
  if (!p.raftGroup().isLeaderReady()) throw new Error('the lone replica did not become leader');
  return p;
}

/** Calls one coalesced request carries in the service figures (a c64 load over 3 tablets shares about this many). */
const SERVICE_BATCH = 16;

type Figure = Promise<{ rate: number; cpuUs: number }>;

/** The services' figures: requests of SERVICE_BATCH calls through the wire codec, 4 in flight. */
function serviceFigures(p: TabletPeer, flags: Flags, clock: HybridClock): { upserts: (base: number, requests: number, rows?: number) => Figure; increments: (base: number, requests: number) => Figure; mutateRows10: (base: number, requests: number) => Figure } {
  const manager = { get: () => p } as unknown as TabletManager;
  const rows = new RowService({ manager: () => manager, flags, clock });
  const ts = new TabletService({ manager, flags, clock, selfUuid: 'ts1', reports: () => Promise.resolve([]) });
  const keyPb = (i: number): DocKeyPB => ({ hash: partitionHash([BigInt(i)]), hashed: [{ int64Value: BigInt(i) }], range: [] });
  let requestId = 1;
  // As a client and the server see them: the request encoded and decoded, the answer too.
  const wire = async <Q, A>(m: MethodDef<Q, A>, handle: (q: Q) => Promise<A>, q: Q): Promise<A> => m.resp.decode(m.resp.encode(await handle(m.req.decode(m.req.encode(q)))));
  const head = { tabletId: META.tabletId, schemaVersion: 0, clientId: 'bench-client', minRunningRequestId: 1n };
  const upsertReq = (base: number, rows: number): WriteRequestPB => ({ ...head, requestId: BigInt(requestId++), ops: Array.from({ length: rows }, (_, k) => ({ type: 'UPSERT', key: keyPb(base + k), columns: [{ columnId: 2, value: { stringValue: 'x' } }] })) });
  // SERVICE_BATCH mutateRows calls of 10 blind puts each in one MutateRows (what 16 mutateRows(10) callers of one tablet send).
  const rows10Req = (base: number): MutateRowsRequestPB => {
    const callOf = (c: number) => ({ rows: Array.from({ length: 10 }, (_, k) => ({ key: keyPb(base + c * 10 + k), conditions: [], mutations: [{ type: 'PUT', columnId: 2, value: { stringValue: 'y' } }] })), requestId: BigInt(requestId++) });
    const [first, ...more] = Array.from({ length: SERVICE_BATCH }, (_, c) => callOf(c));
    return { ...head, rows: first!.rows, requestId: first!.requestId, more };
  };
  const incReq = (base: number): MutateRowsRequestPB => {
    const callOf = (k: number) => ({ rows: [{ key: keyPb(base + k), conditions: [], mutations: [{ type: 'INCREMENT', columnId: 1, by: 1n }] }], requestId: BigInt(requestId++) });
    const [first, ...more] = Array.from({ length: SERVICE_BATCH }, (_, k) => callOf(k));
    return { ...head, rows: first!.rows, requestId: first!.requestId, more };
  };
  return {
    upserts: (base, requests, rows = SERVICE_BATCH) => measure(requests, 4, (i) => wire(tabletServerMethods().write, (q) => ts.write(q), upsertReq(base + i * rows, rows)), rows),
    mutateRows10: (base, requests) => measure(requests, 4, (i) => wire(rowMethods().mutateRows, (q) => rows.mutateRows(q), rows10Req(base + i * SERVICE_BATCH * 10)), SERVICE_BATCH * 10),
    increments: (base, requests) => measure(requests, 4, (i) => wire(rowMethods().mutateRows, (q) => rows.mutateRows(q), incReq(base + i * SERVICE_BATCH)), SERVICE_BATCH),
  };
}

/** One round of the services' figures (wire codec, no socket): the rows upserted first, so the increments read present rows. */
async function serviceRound(svc: ReturnType<typeof serviceFigures>, base: number, ops: number, add: (name: string, f: () => Figure) => Promise<void>): Promise<void> {
  const requests = Math.max(1, Math.floor(ops / SERVICE_BATCH));
  await add(`upsert, ${SERVICE_BATCH} rows per Write request, service + codec (rows/s)`, () => svc.upserts(base + 6_000_000, requests));
  await add(`increment, ${SERVICE_BATCH} coalesced calls per MutateRows, rows not cached, service + codec (ops/s)`, () => svc.increments(base + 6_000_000, requests));
  await add(`increment, ${SERVICE_BATCH} coalesced calls per MutateRows, rows cached, service + codec (ops/s)`, () => svc.increments(base + 6_000_000, requests));
  // Per row, a 160-row entry either way: what the row-ops path adds to a blind upsert's row.
  const big = Math.max(1, Math.floor(ops / (SERVICE_BATCH * 10)));
  await add(`upsert, ${SERVICE_BATCH * 10} rows per Write request, service + codec (rows/s)`, () => svc.upserts(base + 7_000_000, big, SERVICE_BATCH * 10));
  await add(`mutateRows(10 puts), ${SERVICE_BATCH} coalesced calls per MutateRows, service + codec (rows/s)`, () => svc.mutateRows10(base + 8_000_000, big));
}

async function main(): Promise<void> {
  const ops = arg('ops', 5000);
  const rounds = arg('rounds', 2);
  const onlyAt = process.argv.indexOf('--only');
  const only = onlyAt < 0 ? '' : process.argv[onlyAt + 1] ?? '';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-rowops-bench-'));
  const flags = new Flags();
  const clock = new HybridClock(new SystemClock());
  const p = await openPeer(dir, flags, clock);
  const ticker = setInterval(() => p.tick(), 50);
  try {
    const rowOp = (rows: RowMutation[]): Promise<bigint> =>
      p.write({ ops: [], computed: { keys: rows.map((r) => r.key), readsRows: readsRows(rows), compute: (cur) => evaluateRowMutations(rows, cur, 1 << 20).ops }, heldLocks: rows.map((r) => r.lock) });
    const upsert = (i: number): Promise<bigint> => p.write({ ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: key(i), columns: [{ columnId: 2, value: 'x' }] } }] });
    const put = (i: number): Promise<bigint> => rowOp([{ key: key(i), conditions: [], mutations: [{ type: 'PUT', columnId: 2, value: 'y' }] }]);
    const inc = (i: number): Promise<bigint> => rowOp([{ key: key(i), conditions: [], mutations: [{ type: 'INCREMENT', columnId: 1, by: 1n }] }]);
    const rows10 = (i: number): RowMutation[] => Array.from({ length: 10 }, (_, k) => ({ key: key(1_000_000 + i * 10 + k), conditions: [], mutations: [{ type: 'PUT' as const, columnId: 2, value: 'z' }] }));
    const locks = p.rowLockOps();
    const figures = new Map<string, Array<{ rate: number; cpuUs: number }>>();
    const add = async (name: string, f: () => Promise<{ rate: number; cpuUs: number }>): Promise<void> => {
      if (!name.includes(only)) return;
      const v = await f();
      figures.set(name, [...(figures.get(name) ?? []), v]);
      process.stdout.write(`  ${name}: ${Math.round(v.rate)} (CPU ${Math.round(v.cpuUs)} µs per unit)\n`);
    };
    process.stdout.write(`row-ops in-process bench: one replica, ${ops} ops per figure, ${rounds} round(s)\n`);
    await measure(ops, 64, upsert); // warm-up
    for (let r = 0; r < rounds; r++) {
      const base = (r + 1) * 10_000_000; // fresh rows each round: the reads below miss the row cache
      await add('upsert c64 (ops/s)', () => measure(ops, 64, (i) => upsert(base + i)));
      await add('mutateRow put, no read, c64 (ops/s)', () => measure(ops, 64, (i) => put(base + i)));
      // Blind writes do not fill the row cache: these increments read rows it does not hold.
      await add('increment c64, rows just written (ops/s)', () => measure(ops, 64, (i) => inc(base + i)));
      // Their reads filled it and their writes went through into it: a counter incremented again hits.
      await add('increment c64, the same rows again (ops/s)', () => measure(ops, 64, (i) => inc(base + i)));
      await measure(ops, 64, (i) => upsert(base + 5_000_000 + i)); // rows nobody read yet
      await add('point read, row-cache miss, c64 (reads/s)', () => measure(ops, 64, (i) => p.read([key(base + 5_000_000 + i)], {})));
      await add('point read, row-cache hit, c64 (reads/s)', () => measure(ops, 64, (i) => p.read([key(base + 5_000_000 + i)], {})));
      await add('10 upserts one after the other c16 (rows/s)', () => measure(ops / 10, 16, async (i) => {
        for (let k = 0; k < 10; k++) await upsert(base + 2_000_000 + i * 10 + k);
      }, 10));
      await add('mutateRows(10 rows) c16 (rows/s)', () => measure(ops / 10, 16, (i) => rowOp(rows10(base / 10 + i)), 10));
      await add('lock + increment + unlock c16 (cycles/s)', () => measure(ops / 5, 16, async (i) => {
        const k = key(base + 3_000_000 + i);
        const g = await locks.lock(k, { leaseMs: 10_000, holder: 'bench', wait: false, deadlineMonoMs: performance.now() + 10_000 });
        await rowOp([{ key: k, conditions: [], mutations: [{ type: 'INCREMENT', columnId: 1, by: 1n }], lock: { lockId: g.lockId, token: g.token } }]);
        await locks.unlock(k, g.lockId);
      }));
      await add('lock + increment with unlockAfter c16 (cycles/s)', () => measure(ops / 5, 16, async (i) => {
        const k = key(base + 4_000_000 + i);
        const g = await locks.lock(k, { leaseMs: 10_000, holder: 'bench', wait: false, deadlineMonoMs: performance.now() + 10_000 });
        const rows: RowMutation[] = [{ key: k, conditions: [], mutations: [{ type: 'INCREMENT', columnId: 1, by: 1n }], lock: { lockId: g.lockId, token: g.token } }];
        await p.write({ ops: [], computed: { keys: [k], compute: (cur) => evaluateRowMutations(rows, cur, 1 << 20).ops }, heldLocks: [rows[0]!.lock], unlockAfter: [true] });
      }));
      await serviceRound(serviceFigures(p, flags, clock), base, ops, add);
    }
    const mean = (xs: number[]): number => Math.round(xs.reduce((x, y) => x + y, 0) / xs.length);
    process.stdout.write('\n| figure | rate per round | mean | CPU µs per unit (mean) |\n|---|---|---|---|\n');
    for (const [name, vs] of figures) process.stdout.write(`| ${name} | ${vs.map((v) => Math.round(v.rate)).join(', ')} | ${mean(vs.map((v) => v.rate))} | ${mean(vs.map((v) => v.cpuUs))} |\n`);
  } finally {
    clearInterval(ticker);
    await p.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
    process.exitCode = 1;
  });
}
