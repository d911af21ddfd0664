/**
 * The durability lab experiment on real servers (lab/experiments/durability.ts, docs/durability.md),
 * with small sizes: ASYNC, FLUSH and FSYNC tables under a write load, then kill -9 of every tserver at
 * once and a simulated power loss of every tserver at once. FLUSH must lose nothing to kill -9 and
 * FSYNC nothing to either; the report carries the acked / lost table with each level's write rate.
 * Nodes on 127.0.0.225-227.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findExperiment, passed, runExperiment, type ExperimentOptions } from '../../lab/experiments';

const baseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-durability-exp-'));
const opts: ExperimentOptions = { baseDir, hostBase: 225, portOffset: 0, serverEntry: 'dist/cli/main.js', keep: false, params: { writes: 300, loadMs: 4000, writers: 16 }, progress: () => undefined };

afterAll(() => {
  if (!process.env['TESSERA_KEEP_TEST_DATA']) fs.rmSync(baseDir, { recursive: true, force: true });
});

describe('lab experiment durability', () => {
  it('lab experiment durability: FLUSH survives kill -9 of every tserver, FSYNC also a power loss of every tserver; report with acked / lost and the write rate per level', async () => {
    const r = await runExperiment(findExperiment('durability')!, opts);
    expect(r.checks.filter((c) => !c.ok), JSON.stringify(r.checks)).toEqual([]);
    expect(r.checks.map((c) => c.name).sort()).toEqual(['FLUSH loses no acknowledged write on kill-9', 'FSYNC loses no acknowledged write on kill-9', 'FSYNC loses no acknowledged write on power-loss']);
    expect(passed(r)).toBe(true);
    const md = fs.readFileSync(r.reportPath!, 'utf8');
    expect(md).toContain('| level | fault | acknowledged | lost |');
    for (const level of ['ASYNC', 'FLUSH', 'FSYNC']) {
      for (const fault of ['kill-9', 'power-loss']) expect(Number(r.figures[`${level} ${fault} acked`])).toBeGreaterThan(0);
    }
    const json = fs.readdirSync(path.join(baseDir, 'experiments')).filter((f) => f.startsWith('durability-') && f.endsWith('.json'));
    expect(json).toHaveLength(1);
    const body = JSON.parse(fs.readFileSync(path.join(baseDir, 'experiments', json[0]!), 'utf8')) as { rows: unknown[] };
    expect(body.rows).toHaveLength(6);
  }, 300_000);
});
