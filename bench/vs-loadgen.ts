/**
 * Load generator child process of the side-by-side benchmark (`node dist/bench/vs-loadgen.js SPEC`):
 * runs one workload against one system for warm-up + measured seconds and prints, one JSON object per
 * line on stdout, `{"event":"measure-start"}`, `{"event":"measure-end"}` (the parent samples server
 * CPU at those two marks) and `{"event":"result",...}` with the latency histogram (hdr-histogram-js,
 * compressed base64, microseconds; for transactions also one of the commit() call alone). Runs outside
 * the orchestrator so its CPU is measured on its own.
 */
import * as hdr from 'hdr-histogram-js';
import { partitionHash } from '../common/partition-hash';
import { hashPartitions } from '../master/ddl-validation';
import type { Row } from '../client/client-types';
import { TesseraClient } from '../client/tessera-client';
import { EtcdHttp } from './etcd-http';

export type VsSystem = 'tessera' | 'etcd';
export type VsOp = 'put' | 'read' | 'txn' | 'preload';

export interface LoadSpec {
  system: VsSystem;
  op: VsOp;
  concurrency: number;
  warmupSeconds: number;
  seconds: number;
  /** etcd: the client URL the load goes to. */
  etcdUrl?: string;
  /** tessera: master RPC addresses, comma separated. */
  masterAddresses?: string;
  table?: string;
  /** Reads pick keys in [0, readKeys); preload writes exactly those keys. */
  readKeys: number;
  valueBytes: number;
  /** txn: both rows on one tablet (the single-tablet fast path's workload) instead of two. */
  sameTablet?: boolean;
}

export interface LoadResult {
  event: 'result';
  ops: number;
  errors: number;
  firstError?: string;
  seconds: number;
  histogram: string;
  /** txn: latency of the commit() call alone (same encoding as histogram). */
  commitHistogram?: string;
  /** Operations completed in each whole second of the measured window (the partial last one left out). */
  perSecond: number[];
  maxRssBytes: number;
  /**
   * txn: commits of the measured window by path (client.txnCommits): the single-tablet fast path or
   * the distributed one (a fast-path workload whose commits fall back shows it here), and the same
   * for the warm-up.
   */
  commitPaths?: { singleTablet: number; distributed: number; warmupSingleTablet: number; warmupDistributed: number };
}

/** Completions counted per whole second since `startMs`; `counts()` drops the partial last second. */
export class SecondCounter {
  private readonly slots: number[] = [];
  constructor(private readonly startMs: number) {}
  add(nowMs: number): void {
    const i = Math.floor((nowMs - this.startMs) / 1000);
    if (i < 0) return;
    while (this.slots.length <= i) this.slots.push(0);
    this.slots[i]!++;
  }
  counts(endMs: number): number[] {
    const whole = Math.max(0, Math.floor((endMs - this.startMs) / 1000));
    return Array.from({ length: whole }, (_, i) => this.slots[i] ?? 0); // a second without completions is a 0 (a stall)
  }
}

/** Puts go to random keys in a space this large, so they rarely hit the same key twice. */
const PUT_KEY_SPACE = 1_000_000_000;
/** Tries to find a second key on another tablet (3 tablets: each try succeeds with p = 2/3). */
const OTHER_TABLET_TRIES = 64;
const TABLETS_ASSUMED = 3;
/** Pause after a failed op, so a broken target is not hammered in a tight loop. */
const ERROR_PAUSE_MS = 20;

/** One operation; a transaction resolves to its commit() call's duration in microseconds. */
type Op = (value: string) => Promise<number | void>;

interface TxnHandle {
  table(name: string): { upsert(row: Row): Promise<void> };
  commit(): Promise<unknown>;
  abort?(): Promise<void>;
}
interface TxnCapable {
  beginTransaction(o: { isolation: string; deferWrites?: boolean }): Promise<TxnHandle>;
}

export function hasTransactions(c: TesseraClient): boolean {
  return typeof (c as unknown as Partial<TxnCapable>).beginTransaction === 'function';
}

const randKey = (n: number): number => Math.floor(Math.random() * n);
const etcdKey = (k: number): string => `bench/${String(k).padStart(10, '0')}`;

/** Where the master's hash partitions of a TABLETS_ASSUMED-tablet table begin (master/ddl-validation.ts hashPartitions). */
const TABLET_STARTS = hashPartitions(TABLETS_ASSUMED).map((p) => p.start);

/** The tablet of key `k` (its hash partition's index), exactly as the master split the hash space. */
export function tabletOf(k: number): number {
  const h = partitionHash([BigInt(k)]);
  let i = TABLET_STARTS.length - 1;
  while (i > 0 && h < TABLET_STARTS[i]!) i--;
  return i;
}

/** Two random keys on one tablet of a 3-tablet table (the single-tablet transaction workload). */
export function oneTabletKeys(): [number, number] {
  const a = randKey(PUT_KEY_SPACE);
  let b = randKey(PUT_KEY_SPACE);
  for (let i = 0; i < OTHER_TABLET_TRIES && (tabletOf(b) !== tabletOf(a) || b === a); i++) b = randKey(PUT_KEY_SPACE);
  return [a, b];
}

/** Two random keys of the 2-row transaction workload, on different tablets of a 3-tablet table. */
export function twoTabletKeys(): [number, number] {
  const a = randKey(PUT_KEY_SPACE);
  let b = randKey(PUT_KEY_SPACE);
  for (let i = 0; i < OTHER_TABLET_TRIES && tabletOf(b) === tabletOf(a); i++) b = randKey(PUT_KEY_SPACE);
  return [a, b];
}

async function setup(spec: LoadSpec): Promise<{ op: Op; close: () => Promise<void>; commits?: () => { singleTablet: number; distributed: number } }> {
  if (spec.system === 'etcd') {
    if (!spec.etcdUrl) throw new Error('etcd spec without etcdUrl');
    const e = new EtcdHttp(spec.etcdUrl);
    const close = async (): Promise<void> => e.close();
    let next = 0;
    switch (spec.op) {
      case 'put':
        return { op: (v) => e.put(etcdKey(randKey(PUT_KEY_SPACE)), v), close };
      case 'preload':
        return { op: (v) => e.put(etcdKey(next++ % spec.readKeys), v), close };
      case 'read':
        return {
          op: async () => {
            if ((await e.get(etcdKey(randKey(spec.readKeys)))) === undefined) throw new Error('etcd: preloaded key missing');
          },
          close,
        };
      case 'txn':
        throw new Error('etcd has no txn workload in this benchmark');
    }
  }
  if (!spec.masterAddresses || !spec.table) throw new Error('tessera spec without masterAddresses/table');
  const client = await TesseraClient.connect({ masterAddresses: [spec.masterAddresses], timeoutMs: 30_000 });
  const close = (): Promise<void> => client.close();
  const t = client.table(spec.table);
  let next = 0;
  switch (spec.op) {
    case 'put':
      return { op: (v) => t.upsert({ id: BigInt(randKey(PUT_KEY_SPACE)), v }), close };
    case 'preload':
      return { op: (v) => t.upsert({ id: BigInt(next++ % spec.readKeys), v }), close };
    case 'read':
      return {
        op: async () => {
          if ((await t.get({ id: BigInt(randKey(spec.readKeys)) })) === undefined) throw new Error('tessera: preloaded row missing');
        },
        close,
      };
    case 'txn': {
      if (!hasTransactions(client)) throw new Error('client.beginTransaction does not exist yet');
      const tc = client as unknown as TxnCapable;
      const table = spec.table;
      return {
        commits: () => ({ ...client.txnCommits }),
        op: async (v) => {
          const [a, b] = spec.sameTablet === true ? oneTabletKeys() : twoTabletKeys();
          // One tablet: writes kept back to the commit, which then takes the single-tablet fast path
          // (unless the tservers run with enable_txn_fast_path=false: the A/B).
          const txn = await tc.beginTransaction(spec.sameTablet === true ? { isolation: 'snapshot', deferWrites: true } : { isolation: 'snapshot' });
          try {
            await txn.table(table).upsert({ id: BigInt(a), v });
            await txn.table(table).upsert({ id: BigInt(b), v });
            const c0 = performance.now();
            await txn.commit();
            return (performance.now() - c0) * 1000;
          } catch (e) {
            await txn.abort?.().catch(() => undefined);
            throw e;
          }
        },
        close,
      };
    }
  }
}

/** One 2-row transaction (within timeoutMs): undefined when it committed, else why not. */
export async function probeTransaction(client: TesseraClient, table: string, timeoutMs: number): Promise<string | undefined> {
  if (!hasTransactions(client)) return 'client.beginTransaction does not exist in this build';
  const tc = client as unknown as { beginTransaction(o: { isolation: string; timeoutMs: number }): Promise<TxnHandle> };
  try {
    const txn = await tc.beginTransaction({ isolation: 'snapshot', timeoutMs });
    await txn.table(table).upsert({ id: -1n, v: 'probe' });
    await txn.table(table).upsert({ id: -2n, v: 'probe' });
    await txn.commit();
    return undefined;
  } catch (e) {
    return e instanceof Error ? e.message.split('\n')[0] : String(e);
  }
}

/** Probe until a transaction commits (the master creates the status table shortly after start-up). */
export async function waitForTransactions(client: TesseraClient, table: string, timeoutMs: number, retryMs: number): Promise<string | undefined> {
  let why = await probeTransaction(client, table, timeoutMs);
  for (const until = Date.now() + timeoutMs; why !== undefined && Date.now() < until; ) {
    await new Promise((r) => setTimeout(r, retryMs));
    why = await probeTransaction(client, table, timeoutMs);
  }
  return why;
}

function emit(o: object): void {
  process.stdout.write(JSON.stringify(o) + '\n');
}

type Commits = { singleTablet: number; distributed: number };

/** The measured window's commits by path (end − start) and the warm-up's (start). */
function commitPaths(start: Commits, end: Commits): NonNullable<LoadResult['commitPaths']> {
  return { singleTablet: end.singleTablet - start.singleTablet, distributed: end.distributed - start.distributed, warmupSingleTablet: start.singleTablet, warmupDistributed: start.distributed };
}

export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const { op, close, commits } = await setup(spec);
  let commitsAtStart = commits?.();
  const value = 'v'.repeat(spec.valueBytes);
  const h = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: 3 });
  const ch = spec.op === 'txn' ? hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: 3 }) : undefined;
  let errors = 0;
  let firstError: string | undefined;
  let measuring = false;
  const t0 = performance.now();
  const measureStart = t0 + spec.warmupSeconds * 1000;
  const end = measureStart + spec.seconds * 1000;
  // preload: a fixed count of ops instead of a duration.
  let remaining = spec.op === 'preload' ? spec.readKeys : Number.POSITIVE_INFINITY;
  let startedAt = t0;
  let perSecond = new SecondCounter(t0);
  const worker = async (): Promise<void> => {
    for (;;) {
      const now = performance.now();
      if (spec.op === 'preload' ? remaining-- <= 0 : now >= end) return;
      if (!measuring && now >= measureStart) {
        measuring = true;
        startedAt = now;
        perSecond = new SecondCounter(now);
        commitsAtStart = commits?.();
        // The window's start on CLOCK_MONOTONIC (µs), which the servers' V8 profiles also use.
        emit({ event: 'measure-start', monoMicros: Number(process.hrtime.bigint() / 1000n) - Math.round((performance.now() - now) * 1000) });
      }
      const s = performance.now();
      try {
        const commitUs = await op(value);
        const done = performance.now();
        if (measuring || spec.op === 'preload') {
          h.recordValue(Math.min(120_000_000, Math.max(1, Math.round((done - s) * 1000))));
          perSecond.add(done);
        }
        if (measuring && ch && typeof commitUs === 'number') ch.recordValue(Math.min(120_000_000, Math.max(1, Math.round(commitUs))));
      } catch (e) {
        if (measuring || spec.op === 'preload') errors++;
        firstError ??= e instanceof Error ? e.message : String(e);
        await new Promise((r) => setTimeout(r, ERROR_PAUSE_MS));
      }
    }
  };
  await Promise.all(Array.from({ length: spec.concurrency }, worker));
  if (!measuring) emit({ event: 'measure-start' });
  emit({ event: 'measure-end' });
  const endedAt = performance.now();
  const commitsAtEnd = commits?.();
  const seconds = (endedAt - (spec.op === 'preload' ? t0 : startedAt)) / 1000;
  await close().catch(() => undefined);
  const result: LoadResult = {
    event: 'result',
    ops: h.totalCount,
    errors,
    ...(firstError !== undefined ? { firstError } : {}),
    seconds,
    histogram: hdr.encodeIntoCompressedBase64(h),
    ...(ch ? { commitHistogram: hdr.encodeIntoCompressedBase64(ch) } : {}),
    perSecond: perSecond.counts(endedAt),
    maxRssBytes: process.resourceUsage().maxRSS * 1024,
    ...(commitsAtStart && commitsAtEnd ? { commitPaths: commitPaths(commitsAtStart, commitsAtEnd) } : {}),
  };
  h.destroy();
  ch?.destroy();
  return result;
}

if (require.main === module) {
  const spec = JSON.parse(process.argv[2] ?? '{}') as LoadSpec;
  runLoad(spec)
    .then((r) => {
      emit(r);
      process.exit(0);
    })
    .catch((e: unknown) => {
      process.stderr.write(`loadgen failed: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exit(1);
    });
}
