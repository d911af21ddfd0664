/**
 * Process CPU and memory figures from /proc (Linux), for the side-by-side benchmark: CPU seconds are
 * utime+stime of /proc/PID/stat (read before and after a measured window), peak RSS is VmHWM of
 * /proc/PID/status. Elsewhere (no /proc) every figure is undefined and the report says n/a.
 */
import * as fs from 'node:fs';
import { statCpuSeconds, threadCpuSeconds, threadCpuTable, threadCpuDelta, THREAD_KINDS, type ThreadKind } from '../common/proc-threads';

export { threadCpuSeconds, threadCpuTable, threadCpuDelta, THREAD_KINDS, type ThreadKind };

/** CPU time of a process (all its threads) in seconds: in user space and in the kernel. */
export interface CpuSplit {
  userSeconds: number;
  systemSeconds: number;
}

/** utime and stime of a process, or undefined when it is gone or there is no /proc. */
export function cpuSplit(pid: number | undefined): CpuSplit | undefined {
  return pid ? statCpuSeconds(`/proc/${pid}/stat`) : undefined;
}

/** utime+stime of a process in seconds, or undefined when it is gone or there is no /proc. */
export function cpuSeconds(pid: number | undefined): number | undefined {
  const s = cpuSplit(pid);
  return s === undefined ? undefined : s.userSeconds + s.systemSeconds;
}

/** Sum of cpuSplit over pids; undefined when any is unreadable. */
export function cpuSplitSum(pids: ReadonlyArray<number | undefined>): CpuSplit | undefined {
  const sum: CpuSplit = { userSeconds: 0, systemSeconds: 0 };
  for (const p of pids) {
    const s = cpuSplit(p);
    if (s === undefined) return undefined;
    sum.userSeconds += s.userSeconds;
    sum.systemSeconds += s.systemSeconds;
  }
  return sum;
}

/**
 * Thread wake-ups of a process so far: the voluntary context switches of its live threads (each is
 * a thread that went to sleep waiting — for a socket, a lock, the thread pool, a disk flush — and
 * was woken again). Threads that exited no longer count, so compare windows of long-lived servers.
 */
export function threadWakeups(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  try {
    let n = 0;
    for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
      let status: string;
      try {
        status = fs.readFileSync(`/proc/${pid}/task/${t}/status`, 'utf8');
      } catch {
        continue; // the thread exited between the listing and the read
      }
      const m = /^voluntary_ctxt_switches:\s+(\d+)$/m.exec(status);
      if (m) n += Number(m[1]);
    }
    return n;
  } catch {
    return undefined;
  }
}

/** Sum of threadWakeups over pids; undefined when any is unreadable. */
export function threadWakeupsSum(pids: ReadonlyArray<number | undefined>): number | undefined {
  let sum = 0;
  for (const p of pids) {
    const w = threadWakeups(p);
    if (w === undefined) return undefined;
    sum += w;
  }
  return sum;
}

/** Peak resident set size (VmHWM) in bytes. */
export function peakRssBytes(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Filesystem type holding dir (longest mount point prefix in /proc/mounts), or undefined. */
export function filesystemType(dir: string): string | undefined {
  try {
    let best: { mount: string; type: string } | undefined;
    for (const line of fs.readFileSync('/proc/mounts', 'utf8').split('\n')) {
      const [, mount, type] = line.split(' ');
      if (!mount || !type) continue;
      const inside = dir === mount || dir.startsWith(mount.endsWith('/') ? mount : mount + '/');
      if (inside && (!best || mount.length > best.mount.length)) best = { mount, type };
    }
    return best?.type;
  } catch {
    return undefined;
  }
}

/** Clock ticks per second of /proc/stat's counters (USER_HZ, 100 on Linux). */
const USER_HZ = 100;

/**
 * CPU seconds the whole machine spent busy so far (every core: /proc/stat's first line, all but idle
 * and iowait), or undefined without /proc. Less the benchmark's own processes over a window, it is
 * what other processes took: a window measured while others loaded the machine shows it.
 */
export function machineBusySeconds(): number | undefined {
  let text: string;
  try {
    text = fs.readFileSync('/proc/stat', 'latin1');
  } catch {
    return undefined;
  }
  const first = text.slice(0, text.indexOf('\n'));
  if (!first.startsWith('cpu ')) return undefined;
  const f = first.trim().split(/\s+/).slice(1).map(Number);
  if (f.length < 5 || f.some((x) => !Number.isFinite(x))) return undefined;
  // user nice system idle iowait irq softirq steal (guest time is already in user)
  const busy = (f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0);
  return busy / USER_HZ;
}
