/**
 * The row-locks lab experiment on real servers (lab/experiments/row-locks.ts, docs/rows.md): stalled
 * lock holders, ROW_LOCKED and waiting writers beside writers of other rows, leases running out by
 * themselves, and a paused holder's late write refused FENCED. Nodes on 127.0.0.156-158.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findExperiment, passed, runExperiment, type ExperimentOptions } from '../../lab/experiments';

const baseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-row-locks-exp-'));
const opts: ExperimentOptions = { baseDir, hostBase: 156, portOffset: 0, serverEntry: 'dist/cli/main.js', keep: false, progress: () => undefined };

afterAll(() => {
  if (!process.env['TESSERA_KEEP_TEST_DATA']) fs.rmSync(baseDir, { recursive: true, force: true });
});

describe('lab experiment row-locks', () => {
  it('lab experiment row-locks: stalled holders refuse or hold back writers of their rows while other rows are written; the leases free them; a paused holder is fenced; report with a chart', async () => {
    const r = await runExperiment(findExperiment('row-locks')!, opts);
    expect(r.checks.filter((c) => !c.ok), JSON.stringify(r.checks)).toEqual([]);
    expect(passed(r)).toBe(true);
    expect(fs.readFileSync(r.reportPath!, 'utf8')).toContain('**PASSED**');
    expect(fs.existsSync(r.reportPath!.replace(/\.md$/, '.svg'))).toBe(true);
  }, 150_000);
});
