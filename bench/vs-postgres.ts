/**
 * `tessera bench --vs postgres` / `npm run bench -- --vs postgres`: pgbench against tessera's SQL
 * endpoint and against a PostgreSQL this benchmark starts itself, in one run on this machine (issue 54,
 * "Performance"; docs/benchmarks.md). tessera: 1 master + 3 tservers, RF 3, fsync on, on
 * 127.0.0.36+, pgbench on node 0's port 5433. PostgreSQL: initdb in a temp directory, 127.0.0.1 on a
 * free port from 55432, its default settings (fsync on), no replication. Both get `pgbench -i -s S`
 * (timed: COPY of S × 100,000 pgbench_accounts rows and the primary keys), then `-S` and `-N` at each
 * client count for --seconds, over --rounds rounds alternating which system goes first. Latency p50/p99
 * come from pgbench's per-transaction logs (`-l`). With --blog (default), it then times the blog's
 * 100 × 1 MiB INSERT … SELECT + COMMIT through psql on tessera. Nothing here asserts on speed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BenchCluster } from './bench-cluster';
import { guardChildren } from './exit-guard';
import { childCount, readCpu, runCpu, settleChildren, type CpuReading, type RunCpu } from './pg-cpu';
import { findPostgresBin, LocalPostgres, POSTGRES_NOT_INSTALLED } from './postgres-local';
import { latencyPercentilesMs, parseInitDoneSeconds, parsePgbenchSummary } from './pgbench-output';
import { writeReports } from './vs-etcd';
import { spread } from './vs-report';
import { makeDirs } from '../common/fs-dirs';
import { DbError, ErrorCode } from '../common/errors';

const TESSERA_HOST_BASE = 36;
const TSERVERS = 3;
/** -N on tessera retries 40001 (serialization failure) this many times, as docs/sql.md advises. */
const TESSERA_MAX_TRIES = 20;
/** A pgbench run that outlives its duration by this much is killed (every run is bounded). */
const RUN_GRACE_MS = 120_000;
/** `-i` bound per unit of scale (100,000 rows): tessera took 240 s for scale 1 on a loaded machine. */
const INIT_MS_PER_SCALE = 900_000;

export type PgSystem = 'tessera' | 'postgres';
export const PG_WORKLOADS = { select: '-S', 'simple-update': '-N' } as const;
type Workload = keyof typeof PG_WORKLOADS;

export interface VsPostgresOptions {
  scale: number;
  clients: number[];
  seconds: number;
  rounds: number;
  blog: boolean;
  outDir: string;
}

interface Target {
  system: PgSystem;
  args: string[];
}

export interface PgbenchRun {
  system: PgSystem;
  workload: Workload;
  clients: number;
  round: number;
  tps: number;
  latencyAverageMs: number;
  p50Ms: number;
  p99Ms: number;
  transactions: number;
  failed: number;
  retried: number;
  /** CPU µs per transaction (bench/pg-cpu.ts); empty without /proc. */
  cpu: RunCpu;
}

/** SQL statements of one pgbench transaction: -S one SELECT; -N BEGIN, UPDATE, SELECT, INSERT, END. */
export const STATEMENTS_PER_TXN: Record<Workload, number> = { select: 1, 'simple-update': 5 };

export function parseVsPostgresArgs(argv: readonly string[]): VsPostgresOptions {
  const o: VsPostgresOptions = { scale: 10, clients: [1, 16, 64], seconds: 10, rounds: 3, blog: true, outDir: path.resolve(__dirname, '../../bench/results') };
  const num = (name: string, v: string | undefined, min: number): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--${name} needs a whole number >= ${min}, got '${v ?? ''}'`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    const [k, inline] = a.startsWith('--') && a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const val = (): string | undefined => inline ?? argv[++i];
    switch (k) {
      case '--vs': val(); break;
      case '--scale': o.scale = num('scale', val(), 1); break;
      case '--seconds': o.seconds = num('seconds', val(), 1); break;
      case '--rounds': o.rounds = num('rounds', val(), 1); break;
      case '--clients': o.clients = (val() ?? '').split(',').map((c) => num('clients', c.trim(), 1)); break;
      case '--blog': o.blog = true; break;
      case '--no-blog': o.blog = false; break;
      case '--out': o.outDir = path.resolve(val() ?? '.'); break;
      default:
        throw new DbError(ErrorCode.INVALID_ARGUMENT, `unknown option '${a}' (known: --vs postgres --scale N --clients a,b --seconds N --rounds N --blog --no-blog --out DIR)`);
    }
  }
  return o;
}

/** The pgbench or psql running now: killed with the servers when the benchmark is stopped by a signal. */
const running = new Set<ChildProcess>();

/** Run a client program to its end (killed after timeoutMs); its output and wall time. */
function runTool(cmd: string, args: string[], timeoutMs: number, input?: string): Promise<{ code: number | null; stdout: string; stderr: string; seconds: number }> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(cmd, args, { stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    running.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (e) => {
      running.delete(child);
      clearTimeout(timer);
      reject(new DbError(ErrorCode.INVALID_ARGUMENT, `${cmd}: ${e.message}${cmd === 'pgbench' || cmd === 'psql' ? ' (install: apt-get install postgresql-client)' : ''}`));
    });
    child.once('close', (code) => {
      running.delete(child);
      clearTimeout(timer);
      resolve({ code, stdout, stderr, seconds: Number(process.hrtime.bigint() - started) / 1e9 });
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

async function pgbenchInit(t: Target, scale: number): Promise<{ seconds: number; pgbenchSeconds?: number; detail: string }> {
  const r = await runTool('pgbench', ['-i', '-s', String(scale), ...t.args], INIT_MS_PER_SCALE * scale);
  if (r.code !== 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `pgbench -i on ${t.system} failed (${r.code}): ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`);
  const done = /^done in .*$/m.exec(r.stderr)?.[0] ?? '';
  const pgbenchSeconds = parseInitDoneSeconds(r.stderr);
  return { seconds: r.seconds, ...(pgbenchSeconds !== undefined ? { pgbenchSeconds } : {}), detail: done };
}

async function pgbenchRun(t: Target, w: Workload, clients: number, round: number, o: VsPostgresOptions, logDir: string, cpuNow: () => CpuReading, pgPid: number | undefined): Promise<PgbenchRun> {
  const prefix = `${t.system}-${w}-c${clients}-r${round}`;
  const args = [PG_WORKLOADS[w], '-T', String(o.seconds), '-c', String(clients), '-j', String(Math.min(clients, 2)), '-l', `--log-prefix=${path.join(logDir, prefix)}`];
  if (w === 'simple-update' && t.system === 'tessera') args.push(`--max-tries=${TESSERA_MAX_TRIES}`);
  const before = cpuNow();
  const children = childCount(pgPid);
  const r = await runTool('pgbench', [...args, ...t.args], o.seconds * 1000 + RUN_GRACE_MS);
  if (t.system === 'postgres') await settleChildren(pgPid, children);
  const after = cpuNow();
  // pgbench exits 2 when some transaction failed; the summary still counts them.
  if (r.code !== 0 && !/^tps = /m.test(r.stdout)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `pgbench ${PG_WORKLOADS[w]} -c ${clients} on ${t.system} failed (${r.code}): ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`);
  const s = parsePgbenchSummary(r.stdout);
  const logs = fs.readdirSync(logDir).filter((f) => f.startsWith(`${prefix}.`)).map((f) => fs.readFileSync(path.join(logDir, f), 'utf8'));
  const lat = latencyPercentilesMs(logs);
  return { system: t.system, workload: w, clients, round, tps: s.tps, latencyAverageMs: s.latencyAverageMs, p50Ms: lat.p50Ms, p99Ms: lat.p99Ms, transactions: s.transactions, failed: s.failed, retried: s.retried, cpu: runCpu(t.system, before, after, s.transactions) };
}

/** The blog's statements through psql on tessera: seconds of the INSERT … SELECT and of the COMMIT. */
async function timeBlog(tessera: Target): Promise<{ insertMs: number; commitMs: number; wallSeconds: number; rows: number }> {
  const psql = (sql: string, timeoutMs: number): ReturnType<typeof runTool> => runTool('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', ...tessera.args], timeoutMs, sql);
  const setup = await psql('create extension orafce;\ncreate table demo (id bigserial primary key, value text);\n', 120_000);
  if (setup.code !== 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `blog setup failed: ${setup.stderr.trim()}`);
  const run = await psql("\\timing on\nbegin transaction;\ninsert into demo(value) select dbms_random.string('P',1024*1024) from generate_series(1,100);\ncommit;\nselect count(*) from demo;\n", 900_000);
  if (run.code !== 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `blog statements failed: ${run.stderr.trim()}`);
  // With \timing, psql prints "Time: N ms" after each statement: BEGIN, INSERT, COMMIT, SELECT.
  const times = [...run.stdout.matchAll(/^Time: ([0-9.]+) ms/gm)].map((m) => Number(m[1]));
  const rows = Number(/^\s*(\d+)\s*$/m.exec(run.stdout)?.[1] ?? Number.NaN);
  return { insertMs: times[1] ?? Number.NaN, commitMs: times[2] ?? Number.NaN, wallSeconds: run.seconds, rows };
}

export interface PgRow {
  workload: Workload;
  clients: number;
  tessera: { tps: number; p50Ms: number; p99Ms: number; failed: number; retried: number };
  postgres: { tps: number; p50Ms: number; p99Ms: number; failed: number; retried: number };
  /** tessera tps / postgres tps, median over the rounds. */
  ratio: number;
  /** CPU µs per transaction, median over the rounds of each figure (tessera's from its runs, PostgreSQL's from its). */
  cpu: RunCpu;
}

/** One row per workload and client count: medians over the rounds, failures summed. */
export function summarizeRuns(runs: readonly PgbenchRun[]): PgRow[] {
  const keys = [...new Set(runs.map((r) => `${r.workload}|${r.clients}`))];
  return keys.map((k) => {
    const [workload, clients] = [k.split('|')[0] as Workload, Number(k.split('|')[1])];
    const of = (s: PgSystem): PgbenchRun[] => runs.filter((r) => r.workload === workload && r.clients === clients && r.system === s);
    const fig = (rs: PgbenchRun[]): PgRow['tessera'] => ({ tps: spread(rs.map((r) => r.tps)).median, p50Ms: spread(rs.map((r) => r.p50Ms)).median, p99Ms: spread(rs.map((r) => r.p99Ms)).median, failed: rs.reduce((a, r) => a + r.failed, 0), retried: rs.reduce((a, r) => a + r.retried, 0) });
    const t = of('tessera');
    const p = of('postgres');
    const ratios = t.map((tr) => tr.tps / (p.find((pr) => pr.round === tr.round)?.tps ?? Number.NaN)).filter((x) => Number.isFinite(x));
    return { workload, clients, tessera: fig(t), postgres: fig(p), ratio: spread(ratios).median, cpu: medianCpu([...t, ...p]) };
  });
}

/** Each CPU figure's median over the runs that have it. */
function medianCpu(runs: readonly PgbenchRun[]): RunCpu {
  const out: RunCpu = {};
  for (const k of ['tesseraUs', 'endpointUs', 'tabletNodeUs', 'sqlLayerUs', 'postgresUs'] as const) {
    const xs = runs.map((r) => r.cpu[k]).filter((x): x is number => x !== undefined && Number.isFinite(x));
    if (xs.length > 0) out[k] = spread(xs).median;
  }
  return out;
}

const n1 = (x: number): string => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');
const n2 = (x: number): string => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');

export function renderPgTable(rows: readonly PgRow[]): string[] {
  const out = ['| workload | clients | tessera tps | postgres tps | ratio | tessera p50 / p99 ms | postgres p50 / p99 ms | failed (tessera / postgres) | retried (tessera) |', '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |'];
  for (const r of rows) {
    out.push(`| ${PG_WORKLOADS[r.workload]} ${r.workload} | ${r.clients} | ${n1(r.tessera.tps)} | ${n1(r.postgres.tps)} | ${n2(r.ratio)} | ${n2(r.tessera.p50Ms)} / ${n2(r.tessera.p99Ms)} | ${n2(r.postgres.p50Ms)} / ${n2(r.postgres.p99Ms)} | ${r.tessera.failed} / ${r.postgres.failed} | ${r.tessera.retried} |`);
  }
  return out;
}

const n0 = (x: number | undefined): string => (x !== undefined && Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : 'n/a');

/** CPU per transaction and the SQL layer's estimate per statement (bench/pg-cpu.ts says how each is read). */
export function renderCpuTable(rows: readonly PgRow[]): string[] {
  const out = [
    'CPU per transaction, µs (median over the rounds; from /proc around each run). tessera: all three tservers; node 0 (pgbench\'s endpoint: the SQL layer and a third of the tablet leaders); the other tservers (mean: tablet work only); the SQL layer = node 0 minus that mean, also per statement. PostgreSQL: the postmaster and its backends.',
    '',
    '| workload | clients | statements / txn | tessera all tservers | node 0 | other tservers (mean) | SQL layer per txn | SQL layer per statement | PostgreSQL all processes |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of rows) {
    const n = STATEMENTS_PER_TXN[r.workload];
    const c = r.cpu;
    out.push(`| ${PG_WORKLOADS[r.workload]} ${r.workload} | ${r.clients} | ${n} | ${n0(c.tesseraUs)} | ${n0(c.endpointUs)} | ${n0(c.tabletNodeUs)} | ${n0(c.sqlLayerUs)} | ${n0(c.sqlLayerUs === undefined ? undefined : c.sqlLayerUs / n)} | ${n0(c.postgresUs)} |`);
  }
  return out;
}

export async function runVsPostgres(o: VsPostgresOptions): Promise<void> {
  const bin = findPostgresBin();
  if (!bin) throw new DbError(ErrorCode.INVALID_ARGUMENT, POSTGRES_NOT_INSTALLED);
  makeDirs(o.outDir, 'output directory');
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-bench-pgbench-'));
  const unguard = guardChildren(() => {
    for (const c of running) c.kill('SIGKILL');
    fs.rmSync(logDir, { recursive: true, force: true });
  });
  const tessera = new BenchCluster();
  const pg = new LocalPostgres(bin);
  const say = (s: string): boolean => process.stdout.write(`${s}\n`);
  try {
    say(`starting tessera (1 master + ${TSERVERS} tservers, RF 3, fsync on, 127.0.0.${TESSERA_HOST_BASE}+) and PostgreSQL (${bin})`);
    await Promise.all([tessera.start(TSERVERS, TESSERA_HOST_BASE), pg.start()]);
    const sqlHost = tessera.tservers()[0]!.rpcAddress.split(':')[0]!;
    const targets: Target[] = [
      { system: 'tessera', args: ['-h', sqlHost, '-p', '5433', '-U', 'yugabyte', 'yugabyte'] },
      { system: 'postgres', args: ['-h', '127.0.0.1', '-p', String(pg.port), '-U', pg.user, 'postgres'] },
    ];
    const cpuNow = (): CpuReading => readCpu(tessera.tservers().map((s) => s.child.pid), pg.pid);
    const init: Record<string, Awaited<ReturnType<typeof pgbenchInit>>> = {};
    for (const t of [...targets].reverse()) {
      say(`pgbench -i -s ${o.scale} on ${t.system} …`);
      init[t.system] = await pgbenchInit(t, o.scale);
      say(`  ${t.system}: ${init[t.system]!.seconds.toFixed(1)} s (${init[t.system]!.detail})`);
    }
    const runs: PgbenchRun[] = [];
    for (let round = 1; round <= o.rounds; round++) {
      for (const w of Object.keys(PG_WORKLOADS) as Workload[]) {
        for (const c of o.clients) {
          for (const t of round % 2 ? targets : [...targets].reverse()) {
            const r = await pgbenchRun(t, w, c, round, o, logDir, cpuNow, pg.pid);
            runs.push(r);
            say(`  round ${round} ${PG_WORKLOADS[w]} -c ${c} ${t.system}: ${n1(r.tps)} tps, p50 ${n2(r.p50Ms)} ms, p99 ${n2(r.p99Ms)} ms, failed ${r.failed}, retried ${r.retried}, CPU ${n0(r.cpu.tesseraUs ?? r.cpu.postgresUs)} µs/txn`);
          }
        }
      }
    }
    const blog = o.blog ? await timeBlog(targets[0]!) : undefined;
    const rows = summarizeRuns(runs);
    const header = `pgbench: tessera (RF 3, fsync on, ${TSERVERS} tservers) vs PostgreSQL (one node, default fsync); scale ${o.scale}, ${o.seconds} s per run, ${o.rounds} round(s), ${os.cpus().length} cores, load average ${os.loadavg()[0]!.toFixed(1)} at the end`;
    const lines = [`# tessera vs PostgreSQL (pgbench)`, '', header, '', ...renderPgTable(rows), '', ...renderCpuTable(rows), ''];
    for (const s of ['postgres', 'tessera']) lines.push(`- \`pgbench -i -s ${o.scale}\` on ${s}: ${init[s]!.seconds.toFixed(1)} s wall (${init[s]!.detail})`);
    if (blog) lines.push(`- blog on tessera (psql): INSERT … SELECT of 100 × 1 MiB ${(blog.insertMs / 1000).toFixed(2)} s, COMMIT ${(blog.commitMs / 1000).toFixed(2)} s, psql session ${blog.wallSeconds.toFixed(1)} s, ${blog.rows} rows`);
    const md = `${lines.join('\n')}\n`;
    say(`\n${md}`);
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const { jsonPath, mdPath } = writeReports(o.outDir, 'vs-postgres', stamp, { options: o, header, rows, runs, init, ...(blog ? { blog } : {}) }, md);
    say(`wrote ${mdPath} and ${jsonPath}`);
  } finally {
    unguard();
    await Promise.all([tessera.stop(), pg.stop()]);
    fs.rmSync(logDir, { recursive: true, force: true });
  }
}
