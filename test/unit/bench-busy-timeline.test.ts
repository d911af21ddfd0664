/**
 * The benchmark's per-second busy timeline (bench/profiling/busy-timeline.ts): hand-built profiles whose
 * sample times are known against a window's start on the same clock, so each second's busy ms, the
 * split of a sample across a second boundary, the slowest seconds and the table are exact.
 */
import { describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import { analyzeBusy, busyMsPerSecond, MainThreadCpuSampler, onCpuMsPerSecond, renderBusyTimeline, type ThreadCpuSamples } from '../../bench/profiling/busy-timeline';
import type { CpuProfile } from '../../bench/profiling/cpu-profile-summary';
import { parseVsArgs } from '../../bench/vs-etcd';

const frame = (functionName: string, url = '') => ({ functionName, url, lineNumber: -1, scriptId: '0', columnNumber: 0 });

/**
 * A profile from `startTime` with one sample every 100 ms; `busy[k]` says whether sample k (lasting
 * [startTime + 100k ms, startTime + 100(k+1) ms)) is work or idle. Ends at the last sample's end.
 */
function profileOf(startTime: number, busy: readonly boolean[]): CpuProfile {
  const nodes = [
    { id: 1, callFrame: frame('(root)'), children: [2, 3] },
    { id: 2, callFrame: frame('(idle)') },
    { id: 3, callFrame: frame('work', 'file:///repo/dist/raft/raft-group.js') },
  ];
  return {
    nodes,
    startTime,
    endTime: startTime + busy.length * 100_000,
    samples: busy.map((b) => (b ? 3 : 2)),
    timeDeltas: busy.map((_, k) => (k === 0 ? 0 : 100_000)),
  };
}

const pattern = (...perSecond: number[]): boolean[] => perSecond.flatMap((n) => Array.from({ length: 10 }, (_, k) => k < n));

describe('busy timeline', () => {
  it('counts busy ms in each second of the window, splitting a sample across a boundary', () => {
    // Profile starts 1 s before the window and covers 4 s: window seconds 0..2 hold 3, 7 and 10 busy samples.
    const start = 50_000_000;
    const p = profileOf(start - 1_000_000, pattern(10, 3, 7, 10));
    expect(busyMsPerSecond(p, start, 3)).toEqual({ busyMs: [300, 700, 1000], covered: [true, true, true] });
    // A window 50 ms later: each second takes half of a sample from its neighbour.
    const shifted = busyMsPerSecond(p, start + 50_000, 3);
    expect(shifted.busyMs.map((x) => Math.round(x))).toEqual([300, 700, 950]);
    expect(shifted.covered).toEqual([true, true, false]);
    // Seconds outside the profile read 0 and are not covered.
    expect(busyMsPerSecond(p, start + 10_000_000, 2)).toEqual({ busyMs: [0, 0], covered: [false, false] });
  });

  it('lists the slowest seconds with every server busy time, and the slowest tenth against the rest', () => {
    const start = 7_000_000;
    const perSecond = [100, 100, 40, 100, 100, 100, 100, 100, 100, 100, 90, 100];
    // ts0 idle in the slow second 2 (waiting), ts1 busy there (working).
    const ts0 = profileOf(start, pattern(6, 6, 1, 6, 6, 6, 6, 6, 6, 6, 5, 6));
    const ts1 = profileOf(start, pattern(5, 5, 9, 5, 5, 5, 5, 5, 5, 5, 5, 5));
    const w = analyzeBusy({ label: 'txn2-c64 round 1', perSecond, startMonoUs: start }, [
      { name: 'ts0', profile: ts0 },
      { name: 'ts1', profile: ts1 },
    ], 2);
    expect(w).toBeDefined();
    expect(w!.servers).toEqual(['ts0', 'ts1']);
    expect(w!.medianOps).toBe(100);
    expect(w!.medianBusyMs).toEqual([600, 500]);
    expect(w!.slowest).toEqual([
      { second: 2, ops: 40, busyMs: [100, 900] },
      { second: 10, ops: 90, busyMs: [500, 500] },
    ]);
    expect(w!.slowTenth).toEqual({ seconds: 1, medianOps: 40, medianBusyMs: [100, 900] });
    expect(w!.rest).toEqual({ seconds: 11, medianOps: 100, medianBusyMs: [600, 500] });
    const md = renderBusyTimeline([w!]).join('\n');
    expect(md).toContain('| main threads busy per second (V8 profiles of every tserver) | second | ops | of the median | ts0 busy ms | ts1 busy ms |');
    expect(md).toContain('| txn2-c64 round 1 | 2 | 40 | 40 % | 100 | 900 |');
    expect(md).toContain('| txn2-c64 round 1: slowest tenth of the seconds (median) | 1 s | 40 | 40 % | 100 | 900 |');
    expect(md).toContain('| txn2-c64 round 1: the other seconds (median) | 11 s | 100 | 100 % | 600 | 500 |');
  });

  it('analyses only the seconds every profile covers, and nothing without one', () => {
    const start = 3_000_000;
    const full = profileOf(start, pattern(5, 5, 5));
    const late = profileOf(start + 1_000_000, pattern(4, 4)); // started a second into the window
    const w = analyzeBusy({ label: 'w', perSecond: [10, 20, 30], startMonoUs: start }, [
      { name: 'ts0', profile: full },
      { name: 'ts1', profile: late },
    ]);
    expect(w!.slowest.map((s) => s.second)).toEqual([1, 2]);
    expect(analyzeBusy({ label: 'w', perSecond: [10], startMonoUs: start + 60_000_000 }, [{ name: 'ts0', profile: full }])).toBeUndefined();
    expect(renderBusyTimeline([])).toEqual([]);
    // A one-second window: the "other seconds" row has a dash in every server's column.
    const one = analyzeBusy({ label: 'w', perSecond: [10], startMonoUs: start }, [
      { name: 'ts0', profile: full },
      { name: 'ts1', profile: full },
    ]);
    expect(renderBusyTimeline([one!])).toContain('| w: the other seconds (median) | 0 s | – | – | – | – |');
  });

  it('on-CPU ms per second come from /proc samples interpolated at the second boundaries', () => {
    const start = 10_000_000;
    // ts0: 0.5 s of CPU per second, sampled every 0.5 s from 0.25 s before the window; ts1 unreadable once.
    const samples: ThreadCpuSamples['samples'] = [];
    for (let k = 0; k <= 6; k++) samples.push({ monoUs: start - 250_000 + k * 500_000, cpuSeconds: [2 + 0.25 * k, k === 3 ? undefined : 1 + 0.1 * k] });
    const s: ThreadCpuSamples = { names: ['ts0', 'ts1'], samples };
    expect(onCpuMsPerSecond(s, 0, start, 3).map((x) => (x === undefined ? x : Math.round(x)))).toEqual([500, 500, undefined]);
    // ts1: 0.2 s per second, and the missing sample is interpolated over.
    expect(onCpuMsPerSecond(s, 1, start, 2).map((x) => (x === undefined ? x : Math.round(x)))).toEqual([200, 200]);
    expect(onCpuMsPerSecond({ names: ['ts0'], samples: [] }, 0, start, 1)).toEqual([undefined]);
  });

  it('with on-CPU samples the table shows busy / on CPU per server (the difference: waiting for a core)', () => {
    const start = 20_000_000;
    const perSecond = [100, 50, 100];
    const p = profileOf(start, pattern(8, 9, 8));
    const samples = [0, 1, 2, 3].map((k) => ({ monoUs: start + k * 1_000_000, cpuSeconds: [k * 0.6 - (k >= 2 ? 0.2 : 0)] }));
    const w = analyzeBusy({ label: 'w', perSecond, startMonoUs: start, onCpu: { names: ['ts0'], samples } }, [{ name: 'ts0', profile: p }], 1);
    expect(w!.slowest).toEqual([{ second: 1, ops: 50, busyMs: [900], onCpuMs: [expect.closeTo(400, 6)] }]);
    expect(w!.medianOnCpuMs?.map((x) => Math.round(x!))).toEqual([600]);
    const md = renderBusyTimeline([w!]).join('\n');
    expect(md).toContain('| ts0 busy / on CPU ms |');
    expect(md).toContain('| w | 1 | 50 | 50 % | 900 / 400 |');
    expect(md).toContain('busy minus on CPU is the time it waited for a core');
    // A server the samples do not name shows a dash for on CPU.
    const other = analyzeBusy({ label: 'w', perSecond, startMonoUs: start, onCpu: { names: ['ts9'], samples } }, [{ name: 'ts0', profile: p }], 1);
    expect(renderBusyTimeline([other!]).join('\n')).toContain('| w | 1 | 50 | 50 % | 900 / – |');
  });

  it('the sampler reads this process main thread from /proc', async () => {
    if (!fs.existsSync('/proc/self/stat')) {
      process.stdout.write('SKIP the /proc sampler check: no /proc on this machine (Linux only)\n');
      return;
    }
    const sampler = new MainThreadCpuSampler(['self'], [process.pid], 20);
    sampler.start();
    // Keep the main thread on a core for 100 ms of its CPU time (at most 2 s of wall time).
    const cpu0 = process.cpuUsage();
    const cap = Date.now() + 2000;
    while (Date.now() < cap) {
      const d = process.cpuUsage(cpu0);
      if (d.user + d.system >= 100_000) break;
      for (let k = 0; k < 10_000; k++) Math.sqrt(Math.random());
    }
    await new Promise((r) => setTimeout(r, 50)); // the scenario: the sampler ticks after the busy work
    const s = await sampler.stop();
    expect(s.names).toEqual(['self']);
    expect(s.samples.length).toBeGreaterThanOrEqual(2);
    const first = s.samples[0]!.cpuSeconds[0]!;
    const last = s.samples[s.samples.length - 1]!.cpuSeconds[0]!;
    expect(last - first, 'CPU seconds of a spinning main thread').toBeGreaterThan(0.05);
  });

  it('--profile takes ts0 (bare) or all, in either spelling, and refuses anything else', () => {
    expect(parseVsArgs(['--vs', 'etcd']).profile).toBe(false);
    expect(parseVsArgs(['--vs', 'etcd', '--profile']).profile).toBe('ts0');
    expect(parseVsArgs(['--vs', 'etcd', '--profile', '--rounds', '1']).rounds).toBe(1);
    expect(parseVsArgs(['--vs', 'etcd', '--profile', 'all']).profile).toBe('all');
    expect(parseVsArgs(['--vs', 'etcd', '--profile=all']).profile).toBe('all');
    expect(parseVsArgs(['--vs', 'etcd', '--profile', 'ts0']).profile).toBe('ts0');
    expect(() => parseVsArgs(['--vs', 'etcd', '--profile=ts1'])).toThrow(/--profile takes ts0 \(the default\) or all, got 'ts1'/);
  });
});
