/**
 * The benchmark's /proc readers on this very process (Linux only: elsewhere they return undefined and
 * the report says n/a, which the skip below says out loud).
 */
import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cpuSeconds, cpuSplit, cpuSplitSum, threadCpuDelta, threadCpuSeconds, threadCpuTable, threadWakeups, threadWakeupsSum } from '../../bench/proc-stats';

const hasProc = fs.existsSync(`/proc/${process.pid}/task`);

describe.skipIf(!hasProc)('bench proc-stats (needs /proc: Linux)', () => {
  it('cpuSplit: user and kernel seconds grow with work and add up to cpuSeconds', () => {
    const a = cpuSplit(process.pid)!;
    // Burn ~0.2 s of user CPU and make some system calls.
    for (const until = Date.now() + 200; Date.now() < until; ) fs.statSync('.');
    const b = cpuSplit(process.pid)!;
    expect(b.userSeconds + b.systemSeconds).toBeGreaterThan(a.userSeconds + a.systemSeconds);
    expect(b.userSeconds).toBeGreaterThanOrEqual(a.userSeconds);
    expect(b.systemSeconds).toBeGreaterThanOrEqual(a.systemSeconds);
    const total = cpuSeconds(process.pid)!;
    expect(total).toBeGreaterThanOrEqual(b.userSeconds + b.systemSeconds - 1e-9);
    expect(cpuSplitSum([process.pid, process.pid])!.userSeconds).toBeGreaterThanOrEqual(2 * b.userSeconds - 1e-9);
  });

  it('threadWakeups: a thread that sleeps on a timer and is woken counts', async () => {
    const a = threadWakeups(process.pid)!;
    for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 5));
    const b = threadWakeups(process.pid)!;
    // Five waits in epoll on an idle event loop: at least five voluntary switches of the main thread.
    expect(b - a).toBeGreaterThanOrEqual(5);
  });

  it('threadCpuTable: the main thread is the one whose id is the pid, and its work shows as main in the delta', () => {
    const a = threadCpuTable([process.pid]);
    expect(a.get(`${process.pid}/${process.pid}`)?.kind).toBe('main');
    // Spin until this process has used 60 ms of CPU (not for a wall time: on a loaded machine a
    // 150 ms spin got 10 ms of CPU), bounded by 20 s of wall time.
    const cpu0 = process.cpuUsage();
    for (const until = Date.now() + 20_000; Date.now() < until && process.cpuUsage(cpu0).user < 60_000; ) Math.sqrt(Math.random());
    const b = threadCpuTable([process.pid]);
    const d = threadCpuDelta(a, b);
    expect(d.main, 'main-thread CPU of a 60 ms (CPU) spin').toBeGreaterThan(0.02);
    expect(d.rocksdb).toBe(0);
    expect(d.other).toBeGreaterThanOrEqual(0);
    expect(threadCpuSeconds(process.pid)).toBeCloseTo(b.get(`${process.pid}/${process.pid}`)!.seconds, 1);
    // A thread new since the first table counts whole; one that exited is simply absent.
    expect(threadCpuDelta(new Map(), new Map([['1/2', { kind: 'other' as const, seconds: 0.5 }]])).other).toBe(0.5);
    expect(threadCpuTable([4_194_305]).size).toBe(0);
  });

  it('gone or unreadable processes give undefined, and so does any sum that includes one', () => {
    expect(cpuSplit(undefined)).toBeUndefined();
    expect(threadWakeups(undefined)).toBeUndefined();
    // Pid 2^22 + 1 is above Linux's pid_max limit: it cannot exist.
    const gone = 4_194_305;
    expect(cpuSplit(gone)).toBeUndefined();
    expect(threadWakeups(gone)).toBeUndefined();
    expect(threadWakeupsSum([process.pid, gone])).toBeUndefined();
    expect(cpuSplitSum([process.pid, gone])).toBeUndefined();
  });
});
