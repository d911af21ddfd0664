/**
 * Row operations against plain upserts on a throwaway local cluster (1 master + 3 tservers, RF 3;
 * docs/rows.md): increments vs single-row upserts at c64 (upserts with the client's default per-tablet
 * coalescing, and without it), mutateRows of 10 rows of one tablet vs the same 10 rows as 10 upserts
 * one after the other, and lock + write + unlock cycles. Row operations and lock calls run twice:
 * with the client's default coalescing (calls to one tablet in one turn share a request) and without
 * it (a request per call, as before coalescing existed). Beside each rate it prints the CPU the three
 * tservers and this client spent per unit (utime+stime from /proc): on a machine shared with other
 * work the rates swing with the load, the CPU per unit much less; and the client RPCs the tservers
 * handled and the Raft entries they applied per unit (their /prometheus-metrics), and what the Raft
 * rounds cost in calls: log fsyncs, Raft frames sent and apply-stage calls per unit, all tservers. Each figure is
 * warmed up first on a table of its own, and odd rounds run the figures in reverse order (the first
 * ones measured dearer): compare over an even number of rounds. Prints tables; asserts nothing.
 *
 *   node dist/bench/row-ops-bench.js [--host_base 150] [--seconds 8] [--rounds 2] [--only TEXT] [--cpu_prof_dir DIR] [--tserver_flag NAME=VALUE ...] [--row_inflight_max N]
 *
 * --only runs the figures whose name contains TEXT; --cpu_prof_dir profiles the tservers (node
 * --cpu-prof, written there when they are stopped by SIGTERM at the end; summarise each with
 * `node dist/bench/main.js profile FILE`); --tserver_flag passes a flag to every tserver (repeatable:
 * `--tserver_flag docdb_point_read_iterators=false` is the A/B of bench/results/2026-12-07-rows-4.md);
 * --row_inflight_max sets the coalescing client's rowRequestsInflightMax (0: no bound, the A/B of
 * bench/results/2026-12-07-rows-7.md).
 */
import { TesseraClient } from '../client/tessera-client';
import { partitionHash } from '../common/partition-hash';
import { httpRequest } from '../lab/console-http';
import { BenchCluster } from './bench-cluster';
import { cpuSeconds } from './proc-stats';

interface Args {
  hostBase: number;
  seconds: number;
  rounds: number;
  only: string;
  cpuProfDir: string;
  /** Flags given to every tserver (--tserver_flag, repeatable), e.g. docdb_point_read_iterators=false for an A/B. */
  tserverFlags: string[];
  /** The coalescing client's rowRequestsInflightMax (--row_inflight_max; undefined: the client's default). */
  rowInflightMax: number | undefined;
}

function parseArgs(argv: string[]): Args {
  const get = (name: string, dflt: number): number => {
    const i = argv.indexOf(`--${name}`);
    if (i < 0) return dflt;
    const v = Number(argv[i + 1]);
    if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} needs a positive number`);
    return v;
  };
  const text = (name: string): string => {
    const i = argv.indexOf(`--${name}`);
    return i < 0 ? '' : argv[i + 1] ?? '';
  };
  const tserverFlags = argv.flatMap((x, i) => (x === '--tserver_flag' && argv[i + 1] ? [`--${argv[i + 1]!.replace(/^--/, '')}`] : []));
  const rim = text('row_inflight_max');
  if (rim !== '' && !(Number.isSafeInteger(Number(rim)) && Number(rim) >= 0)) throw new Error('--row_inflight_max needs an integer >= 0');
  return { hostBase: get('host_base', 150), seconds: get('seconds', 8), rounds: get('rounds', 2), only: text('only'), cpuProfDir: text('cpu_prof_dir'), tserverFlags, rowInflightMax: rim === '' ? undefined : Number(rim) };
}

interface Figure {
  /** Units per second. */
  rate: number;
  /** CPU µs the tservers (all three) and this client process spent per unit; NaN without /proc. */
  serverCpuUs: number;
  clientCpuUs: number;
  /** serverCpuUs less what the tservers spend anyway (heartbeats, ticks: measured idle before the rounds). */
  serverNetCpuUs: number;
  /** Client RPCs the tservers handled (MutateRows, Write, LockRow, RowLock) and Raft entries applied (per replica), per unit. */
  rpcs: number;
  entries: number;
  /**
   * Per unit, summed over the three tservers: Raft log fdatasyncs, Raft message frames sent (one per
   * destination and turn), apply-stage calls (one RocksDB write each) — where a Raft round's CPU goes.
   */
  fsyncs: number;
  raftFrames: number;
  applyBatches: number;
}

type Counters = { rpcs: number; entries: number; fsyncs: number; raftFrames: number; applyBatches: number };

/** Client RPCs handled, Raft entries applied and the Raft work counters so far, summed over the tservers (their /prometheus-metrics). */
async function counters(webAddresses: readonly string[]): Promise<Counters> {
  const c: Counters = { rpcs: 0, entries: 0, fsyncs: 0, raftFrames: 0, applyBatches: 0 };
  for (const w of webAddresses) {
    const body = (await httpRequest(`http://${w}/prometheus-metrics`)).body;
    for (const line of body.split('\n')) {
      const v = Number(line.slice(line.lastIndexOf(' ') + 1));
      if (/^tserver_rpc_ops_total\{method="(MutateRows|Write|LockRow|RowLock)"/.test(line)) c.rpcs += v;
      else if (line.startsWith('tserver_raft_apply{')) {
        if (line.includes('kind="entries"')) c.entries += v;
        else if (line.includes('kind="batches"')) c.applyBatches += v;
      } else if (line.startsWith('tserver_log_fsyncs{')) c.fsyncs += v;
      else if (line.startsWith('tserver_raft_batches{') && line.includes('direction="sent"')) c.raftFrames += v;
    }
  }
  // Every replica applies each entry: three of them (RF 3).
  c.entries /= 3;
  return c;
}

/** CPU seconds of these processes together (NaN when one is unreadable). */
function cpuOf(pids: ReadonlyArray<number | undefined>): number {
  let s = 0;
  for (const p of pids) s += cpuSeconds(p) ?? Number.NaN;
  return s;
}

/** `workers` loops of `op` for `ms`; units done per second (each op counts `weight` units) and CPU per unit. */
async function measure(servers: ReadonlyArray<number | undefined>, webs: readonly string[], workers: number, ms: number, op: (w: number, i: number) => Promise<unknown>, weight = 1, idleCpuUsPerS = 0): Promise<Figure> {
  const n0 = await counters(webs);
  const end = performance.now() + ms;
  let done = 0;
  const s0 = cpuOf(servers);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      for (let i = 0; performance.now() < end; i++) {
        await op(w, i);
        done += weight;
      }
    }),
  );
  const c = process.cpuUsage(c0);
  const seconds = (performance.now() - t0) / 1000;
  const serverUs = (cpuOf(servers) - s0) * 1e6;
  const n1 = await counters(webs);
  const per = (k: keyof Counters): number => (n1[k] - n0[k]) / done;
  return { rpcs: per('rpcs'), entries: per('entries'), fsyncs: per('fsyncs'), raftFrames: per('raftFrames'), applyBatches: per('applyBatches'), rate: done / seconds, serverCpuUs: serverUs / done, clientCpuUs: (c.user + c.system) / done, serverNetCpuUs: (serverUs - idleCpuUsPerS * seconds) / done };
}

/** CPU µs per second the tservers spend with no client load (heartbeats, Raft ticks, metrics). */
async function idleCpuUsPerS(servers: ReadonlyArray<number | undefined>, ms: number): Promise<number> {
  const s0 = cpuOf(servers);
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, ms));
  return ((cpuOf(servers) - s0) * 1e6) / ((performance.now() - t0) / 1000);
}

/** SIGTERM the tservers and wait (bounded) for them to exit: node writes --cpu-prof profiles on a clean exit. */
async function stopForProfiles(cluster: BenchCluster): Promise<void> {
  const ts = cluster.servers.filter((x) => x.role === 'tserver' && x.child.exitCode === null);
  await Promise.all(
    ts.map(
      (x) =>
        new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 20_000);
          x.child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          x.child.kill('SIGTERM');
        }),
    ),
  );
}

/** Ratios the targets name, within one round (the load is about the same inside it). */
const RATIOS: ReadonlyArray<{ name: string; of: string; to: string; target: number }> = [
  { name: 'increment / upsert at c64 (rates)', of: 'increment c64 (ops/s)', to: 'upsert c64 (ops/s, client coalescing on: default)', target: 0.9 },
  { name: 'increment of 4096 hot counters / upsert at c64 (rates)', of: 'increment c64, 4096 hot counters (ops/s)', to: 'upsert c64 (ops/s, client coalescing on: default)', target: 0.9 },
  { name: 'mutateRows(10) / 10 upserts one after the other (rows/s)', of: 'mutateRows(10 rows) c16 (rows/s)', to: '10 upserts one after the other c16 (rows/s)', target: 5 },
  { name: 'mutateRows(10) / 10 upserts one after the other, coalescing off (rows/s; not the target\'s baseline)', of: 'mutateRows(10 rows) c16 (rows/s)', to: '10 upserts one after the other c16 (rows/s, coalescing off)', target: 5 },
];

const KEYS = 100_000;

type BenchTable = ReturnType<TesseraClient['table']>;
interface BenchCase {
  name: string;
  workers: number;
  op: (w: number, i: number) => Promise<unknown>;
  weight?: number;
}

const key = (w: number, i: number): bigint => BigInt((w * 7919 + i * 104_729) % KEYS);
/** The coalescing-off figures' rows, apart from the default's. */
const KEYS_OFF = 10_000_000n;

/** The figures: `t` coalesces (the client default), `tp` does not; `sameTablet`: ids of one tablet. */
function benchCases(t: BenchTable, tp: BenchTable, sameTablet: readonly bigint[]): BenchCase[] {
  const rows10 = (w: number, i: number): bigint[] => Array.from({ length: 10 }, (_, k) => sameTablet[(w * 977 + i * 10 + k) % sameTablet.length]!);
  // unlockAfter: the unlock rides the increment's Raft round (docs/rows.md), two rounds a cycle instead of three.
  const lockCycle = (table: typeof t, base: number, unlockAfter = false) => async (w: number, i: number): Promise<void> => {
    const k = { id: BigInt(base + w * 1000 + (i % 1000)) };
    const lock = await table.lockRow(k, { leaseMs: 10_000 });
    await table.increment(k, { n: 1 }, { lock, unlockAfter });
    if (!unlockAfter) await table.unlockRow(lock);
  };
  return [
    { name: 'upsert c64 (ops/s, client coalescing on: default)', workers: 64, op: (w, i) => t.upsert({ id: key(w, i), v: 'x' }) },
    // Each side's increments read the rows its upserts wrote (not yet in the row cache): same work on and off.
    { name: 'upsert c64 (ops/s, coalescing off)', workers: 64, op: (w, i) => tp.upsert({ id: KEYS_OFF + key(w, i), v: 'x' }) },
    { name: 'increment c64 (ops/s)', workers: 64, op: (w, i) => t.increment({ id: key(w, i) }, { n: 1 }) },
    { name: 'increment c64 (ops/s, coalescing off)', workers: 64, op: (w, i) => tp.increment({ id: KEYS_OFF + key(w, i) }, { n: 1 }) },
    // Counters incremented over and over (4096 of them): their rows stay in the row cache (write-through).
    { name: 'increment c64, 4096 hot counters (ops/s)', workers: 64, op: (w, i) => t.increment({ id: BigInt(200_000 + ((w * 64 + i) % 4096)) }, { n: 1 }) },
    {
      name: '10 upserts one after the other c16 (rows/s)',
      workers: 16,
      weight: 10,
      op: async (w, i) => {
        for (const id of rows10(w, i)) await t.upsert({ id, v: 'y' });
      },
    },
    // The same without the client's coalescing: each upsert its own RPC and Raft entry (what "10
    // separate upserts" cost a client that does not batch; the ratio's baseline stays the default).
    {
      name: '10 upserts one after the other c16 (rows/s, coalescing off)',
      workers: 16,
      weight: 10,
      op: async (w, i) => {
        for (const id of rows10(w, i)) await tp.upsert({ id, v: 'y' });
      },
    },
    { name: 'mutateRows(10 rows) c16 (rows/s)', workers: 16, weight: 10, op: (w, i) => t.mutateRows(rows10(w, i).map((id) => ({ key: { id }, put: { v: 'y' } }))) },
    { name: 'mutateRows(10 rows) c16 (rows/s, coalescing off)', workers: 16, weight: 10, op: (w, i) => tp.mutateRows(rows10(w, i).map((id) => ({ key: { id }, put: { v: 'y' } }))) },
    { name: 'lock + increment + unlock c16 (cycles/s)', workers: 16, op: lockCycle(t, 50_000) },
    { name: 'lock + increment with unlockAfter c16 (cycles/s)', workers: 16, op: lockCycle(t, 90_000, true) },
    { name: 'lock + increment + unlock c16 (cycles/s, coalescing off)', workers: 16, op: lockCycle(tp, 70_000) },
  ];
}

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  const cluster = new BenchCluster();
  const clients: TesseraClient[] = [];
  try {
    process.stdout.write(`row-ops bench: 1 master + 3 tservers (RF 3) on 127.0.0.${a.hostBase}+; ${a.rounds} round(s) of ${a.seconds} s per figure\n`);
    await cluster.start(3, a.hostBase, a.tserverFlags, a.cpuProfDir ? { tserverNodeArgs: () => ['--cpu-prof', `--cpu-prof-dir=${a.cpuProfDir}`] } : {});
    const c = await TesseraClient.connect({ masterAddresses: [cluster.masterAddress], timeoutMs: 30_000, ...(a.rowInflightMax !== undefined ? { rowRequestsInflightMax: a.rowInflightMax } : {}) });
    const plain = await TesseraClient.connect({ masterAddresses: [cluster.masterAddress], timeoutMs: 30_000, batchWrites: false });
    clients.push(c, plain);
    await c.createTable({ name: 'bench_rows', columns: [{ name: 'id', type: 'int64' }, { name: 'n', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 3 });
    await c.createTable({ name: 'bench_warm', columns: [{ name: 'id', type: 'int64' }, { name: 'n', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 3 });
    const loc = await c.tableLocations('bench_rows');
    // Ids grouped by tablet: a mutateRows call takes 10 ids of one tablet.
    const first = loc.tablets[0]!;
    const sameTablet = Array.from({ length: 20_000 }, (_, i) => BigInt(i)).filter((id) => {
      const h = partitionHash([id]);
      return h >= first.start && h < first.end;
    });
    const ms = a.seconds * 1000;
    const t = c.table('bench_rows');
    const tp = plain.table('bench_rows');
    const servers = cluster.servers.filter((x) => x.role === 'tserver').map((x) => x.child.pid);
    const webs = cluster.servers.filter((x) => x.role === 'tserver').map((x) => x.webAddress);
    const figures = new Map<string, Figure[]>();
    const add = (name: string, f: Figure): void => {
      figures.set(name, [...(figures.get(name) ?? []), f]);
      process.stdout.write(`  ${name}: ${Math.round(f.rate)} (tserver CPU ${Math.round(f.serverCpuUs)} µs, ${Math.round(f.serverNetCpuUs)} µs net of idle; client CPU ${Math.round(f.clientCpuUs)} µs; ${f.rpcs.toFixed(2)} RPCs, ${f.entries.toFixed(2)} Raft entries per unit; all tservers: ${f.fsyncs.toFixed(2)} log fsyncs, ${f.raftFrames.toFixed(2)} Raft frames sent, ${f.applyBatches.toFixed(2)} apply calls per unit)\n`);
    };
    await measure(servers, webs, 16, 2000, (w, i) => t.upsert({ id: key(w, i), v: 'warm' })); // warm-up
    const idle = await idleCpuUsPerS(servers, 3000);
    process.stdout.write(`  tservers idle: ${Math.round(idle / 1000)} ms CPU per second (all three)\n`);
    const run = (workers: number, op: (w: number, i: number) => Promise<unknown>, weight = 1): Promise<Figure> => measure(servers, webs, workers, ms, op, weight, idle);
    const cases = benchCases(t, tp, sameTablet).filter((x) => x.name.includes(a.only));
    // Each figure's code paths warmed up first (JIT, connections), for up to 2 s each.
    // On a table of their own, so the figures' rows stay as they were (not read into the row cache).
    const warm = benchCases(c.table('bench_warm'), plain.table('bench_warm'), sameTablet).filter((x) => x.name.includes(a.only));
    for (const x of warm) await measure(servers, webs, x.workers, Math.min(2000, ms), x.op, x.weight);
    for (let r = 0; r < a.rounds; r++) {
      // Odd rounds run the figures in reverse: whatever ran first measured dearer and slower even
      // after the warm-up (the lock cycle's coalescing-off figure, put first, cost 4,474 µs a cycle
      // against the default's 2,343 µs last; in the usual order it was the other way round), so
      // compare figures over an even number of rounds (bench/results/2026-12-07-rows-3.md).
      for (const x of r % 2 === 0 ? cases : [...cases].reverse()) add(x.name, await run(x.workers, x.op, x.weight));
    }
    const mean = (xs: number[]): number => xs.reduce((x, y) => x + y, 0) / xs.length;
    process.stdout.write('\n| figure | rate per round | mean rate | tserver CPU µs per unit (net of idle) | client CPU µs per unit | RPCs / Raft entries per unit | log fsyncs / Raft frames / apply calls per unit (all tservers) |\n|---|---|---|---|---|---|---|\n');
    for (const [name, fs] of figures) {
      process.stdout.write(`| ${name} | ${fs.map((f) => Math.round(f.rate)).join(', ')} | ${Math.round(mean(fs.map((f) => f.rate)))} | ${Math.round(mean(fs.map((f) => f.serverCpuUs)))} (${Math.round(mean(fs.map((f) => f.serverNetCpuUs)))}) | ${Math.round(mean(fs.map((f) => f.clientCpuUs)))} | ${mean(fs.map((f) => f.rpcs)).toFixed(2)} / ${mean(fs.map((f) => f.entries)).toFixed(2)} | ${mean(fs.map((f) => f.fsyncs)).toFixed(2)} / ${mean(fs.map((f) => f.raftFrames)).toFixed(2)} / ${mean(fs.map((f) => f.applyBatches)).toFixed(2)} |\n`);
    }
    process.stdout.write('\n| ratio | per round | target |\n|---|---|---|\n');
    for (const x of RATIOS) {
      const of = figures.get(x.of) ?? [];
      const to = figures.get(x.to) ?? [];
      process.stdout.write(`| ${x.name} | ${of.map((f, i) => (to[i] ? (f.rate / to[i].rate).toFixed(2) : 'n/a')).join(', ')} | ≥ ${x.target} |\n`);
    }
  } finally {
    for (const x of clients) await x.close().catch(() => undefined);
    if (a.cpuProfDir) await stopForProfiles(cluster);
    await cluster.stop();
  }
}

if (require.main === module) {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
    process.exitCode = 1;
  });
}
