/**
 * Crash loop (issue 9): kill -9 of every process of a 1-master/3-tserver cluster, 50 times, while
 * clients write; every restart must recover and no acknowledged write may be lost (one final read
 * holds every acknowledged key). Its own file so it runs beside the other verify workloads. Node i
 * listens on 127.0.0.(230+i). More cycles: `tessera verify --workload crash --cycles N`.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCrashLoop } from '../../lab/verify/crash-loop';
import { verdictLine } from '../../lab/verify/verify-report';

const DIR = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-verify-crash-it-'));
let keep = false;
afterAll(() => {
  if (keep) process.stdout.write(`crash-loop data kept in ${DIR}\n`);
  else if (!process.env['TESSERA_KEEP_TEST_DATA']) fs.rmSync(DIR, { recursive: true, force: true });
});
const HOST_BASE = 230;
const CYCLES = 50;

describe('verify: crash loop on a real cluster', () => {
  it(`verify: crash loop (kill -9 of every process, ${CYCLES} cycles) recovers each time and loses no acknowledged write`, async () => {
    const r = await runCrashLoop({ cycles: CYCLES, seed: 15, dir: path.join(DIR, 'crash'), hostBase: HOST_BASE, portOffset: 0, uptimeMs: [400, 1_000] });
    process.stdout.write(`${verdictLine(r)} [${r.timeMs} ms]\n`);
    for (const d of r.details) process.stdout.write(`  - ${d.slice(0, 400)}\n`);
    if (r.verdict !== 'valid') keep = true;
    expect(r.anomalies).toEqual({});
    expect(r.lostWrites).toBe(0);
    expect(r.faults.length).toBe(CYCLES);
    expect(r.faults.every((f) => !f.skipped)).toBe(true);
    expect(r.counts.ok).toBeGreaterThan(0);
    // After the last restart every replica of every tablet shows the same rows.
    expect(r.convergence?.diverged).toEqual([]);
    expect(r.convergence!.converged).toBeGreaterThan(0);
    expect(r.drain?.drained, JSON.stringify(r.drain)).toBe(true);
    expect(r.drain?.countDrift, JSON.stringify(r.drain)).toEqual([]);
  }, 600_000);
});
