/**
 * CPU time of a process's threads from /proc (Linux), by kind: the main thread (a Node server's event
 * loop, where all its JavaScript runs), RocksDB's background threads, and the rest. The servers'
 * /prometheus-metrics (process_thread_cpu_seconds) and the benchmarks read it. Elsewhere (no /proc)
 * every reader returns undefined or nothing.
 */
import * as fs from 'node:fs';

/**
 * Clock ticks per second of /proc's utime and stime: USER_HZ (sysconf(_SC_CLK_TCK)), which Linux
 * fixes at 100 for user space on every architecture Node runs on. A constant, so that a server never
 * spawns `getconf` to learn it.
 */
export const USER_HZ = 100;

/**
 * User and kernel CPU seconds from a /proc stat file (a process's /proc/PID/stat or a thread's
 * /proc/PID/task/TID/stat: utime and stime are fields 14 and 15), or undefined when it cannot be read.
 */
export function statCpuSeconds(statPath: string): { userSeconds: number; systemSeconds: number } | undefined {
  try {
    const stat = fs.readFileSync(statPath, 'utf8');
    // Fields after the command name (which may hold spaces) start after the last ')'; rest[0] is field 3.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(rest[11]);
    const stime = Number(rest[12]);
    if (!Number.isFinite(utime) || !Number.isFinite(stime)) return undefined;
    return { userSeconds: utime / USER_HZ, systemSeconds: stime / USER_HZ };
  } catch {
    return undefined;
  }
}

/**
 * utime+stime in seconds of one thread of a process (`tid` = `pid`: its main thread, which runs a
 * Node server's event loop), or undefined when it is gone or there is no /proc. USER_HZ resolution
 * (10 ms on Linux).
 */
export function threadCpuSeconds(pid: number | undefined, tid: number | undefined = pid): number | undefined {
  if (!pid || !tid) return undefined;
  const c = statCpuSeconds(`/proc/${pid}/task/${tid}/stat`);
  return c === undefined ? undefined : c.userSeconds + c.systemSeconds;
}

/**
 * What a server thread is, from /proc: its process's main thread (a Node server's event loop: all
 * JavaScript), RocksDB's background threads (named `rocksdb:*`: memtable flushes, compactions), or
 * another thread (in Node: libuv's pool — RocksDB writes and reads, WAL fdatasyncs, file I/O — and V8's
 * platform workers — garbage collection, the optimizing compiler — which Node leaves unnamed).
 */
export type ThreadKind = 'main' | 'rocksdb' | 'other';
export const THREAD_KINDS: readonly ThreadKind[] = ['main', 'rocksdb', 'other'];

/** One live thread of a process, as /proc shows it. */
export interface ThreadRow {
  tid: number;
  /** Its name (/proc/PID/task/TID/comm; Node's unnamed threads read "node"). */
  name: string;
  kind: ThreadKind;
  userSeconds: number;
  systemSeconds: number;
}

/** Every live thread of `pid` with its CPU so far, in thread-id order ([] when gone or without /proc). */
export function threadsOf(pid: number): ThreadRow[] {
  let tids: string[];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const out: ThreadRow[] = [];
  for (const tid of tids) {
    let name: string;
    try {
      name = fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
    } catch {
      continue; // the thread exited between the listing and the read
    }
    const c = statCpuSeconds(`/proc/${pid}/task/${tid}/stat`);
    if (c === undefined) continue;
    out.push({ tid: Number(tid), name, kind: String(pid) === tid ? 'main' : name.startsWith('rocksdb') ? 'rocksdb' : 'other', ...c });
  }
  return out.sort((a, b) => a.tid - b.tid);
}

/** The threads of each kind (in THREAD_KINDS order): how many, and their user and kernel CPU seconds together. */
export function threadKindSums(rows: readonly ThreadRow[]): Array<{ kind: ThreadKind; threads: number; userSeconds: number; systemSeconds: number }> {
  return THREAD_KINDS.map((kind) => {
    const mine = rows.filter((t) => t.kind === kind);
    return { kind, threads: mine.length, userSeconds: mine.reduce((a, t) => a + t.userSeconds, 0), systemSeconds: mine.reduce((a, t) => a + t.systemSeconds, 0) };
  });
}

/** CPU seconds so far of every live thread of `pids`, keyed `pid/tid`, with its kind. */
export function threadCpuTable(pids: ReadonlyArray<number | undefined>): Map<string, { kind: ThreadKind; seconds: number }> {
  const out = new Map<string, { kind: ThreadKind; seconds: number }>();
  for (const pid of pids) {
    if (!pid) continue;
    for (const t of threadsOf(pid)) out.set(`${pid}/${t.tid}`, { kind: t.kind, seconds: t.userSeconds + t.systemSeconds });
  }
  return out;
}

/**
 * CPU seconds each kind of thread used between two tables (a thread new in `after` counts whole; one
 * that exited meanwhile is lost, so compare windows of long-lived servers).
 */
export function threadCpuDelta(before: ReadonlyMap<string, { seconds: number }>, after: ReadonlyMap<string, { kind: ThreadKind; seconds: number }>): Record<ThreadKind, number> {
  const d: Record<ThreadKind, number> = { main: 0, rocksdb: 0, other: 0 };
  for (const [k, t] of after) d[t.kind] += Math.max(0, t.seconds - (before.get(k)?.seconds ?? 0));
  return d;
}

