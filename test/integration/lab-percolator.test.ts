/**
 * The Percolator lab experiments on real servers (docs/percolator.md), one after the other on
 * 127.0.0.116-118: txn-protocols (lab/experiments/txn-protocols.ts: the same bank through
 * YugabyteDB-style and Percolator transactions on one cluster, then a client dying mid-commit in
 * each protocol) and percolator-index (lab/experiments/percolator-index.ts: the paper's indexing
 * pipeline with observer worker processes killed and a tserver paused).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findExperiment, passed, runExperiment, type ExperimentOptions } from '../../lab/experiments';

const baseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-txn-protocols-exp-'));
const opts: ExperimentOptions = { baseDir, hostBase: 116, portOffset: 0, serverEntry: 'dist/cli/main.js', keep: false, progress: () => undefined };

afterAll(() => {
  if (!process.env['TESSERA_KEEP_TEST_DATA']) fs.rmSync(baseDir, { recursive: true, force: true });
});

describe('lab experiments txn-protocols and percolator-index', () => {
  it('lab experiment txn-protocols: both protocols keep the total under load; a dead client is cleaned up by the next one in each (abort or expiry, roll back, roll forward); report with a chart', async () => {
    const r = await runExperiment(findExperiment('txn-protocols')!, opts);
    expect(r.checks.filter((c) => !c.ok), JSON.stringify(r.checks)).toEqual([]);
    expect(passed(r)).toBe(true);
    expect(r.checks.length).toBe(5);
    expect(typeof r.figures['percolatorDeadAfterPrewriteWaitMs']).toBe('number');
    const md = fs.readFileSync(r.reportPath!, 'utf8');
    expect(md).toContain('**PASSED**');
    expect(md).toContain('yugabyteTransfersPerSec');
    expect(fs.existsSync(r.reportPath!.replace(/\.md$/, '.svg'))).toBe(true);
  }, 150_000);

  it('lab experiment percolator-index: with observer workers killed -9 and a tserver paused, the backlog drains, one canonical (highest-ranked) page per content hash, every link inverted exactly once, no lock left', async () => {
    const r = await runExperiment(findExperiment('percolator-index')!, opts);
    expect(r.checks.filter((c) => !c.ok), JSON.stringify(r.checks)).toEqual([]);
    expect(passed(r)).toBe(true);
    expect(r.checks.length).toBe(4);
    expect(r.figures['workerKills']).toBe(2);
    expect(fs.readFileSync(r.reportPath!, 'utf8')).toContain('**PASSED**');
  }, 300_000);
});
