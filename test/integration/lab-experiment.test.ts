/**
 * Lab experiments end to end on real servers (127.0.0.55-57): each runs on a fresh 3-node lab, every
 * check must hold, and the Markdown report (with its SVG chart) is written under the base dir. Also
 * the report helpers on their own: the SVG chart scales points into its plot area.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { longestStall } from '../../lab/experiments/write-load';
import { EXPERIMENTS, findExperiment, passed, renderMarkdown, runExperiment, svgLineChart, type ExperimentOptions } from '../../lab/experiments';

const baseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-lab-exp-'));
const opts: ExperimentOptions = { baseDir, hostBase: 55, portOffset: 0, serverEntry: 'dist/cli/main.js', keep: false, progress: () => undefined };

afterAll(() => {
  if (!process.env['TESSERA_KEEP_TEST_DATA']) fs.rmSync(baseDir, { recursive: true, force: true });
});

describe('lab experiments', () => {
  it('report: svgLineChart draws one polyline per series inside the plot and a legend; markdown lists failed checks', () => {
    const svg = svgLineChart(
      [
        { name: 'n0', points: [[0, 0], [1000, 2048], [2000, 4096]] },
        { name: 'n1 <x>', points: [[0, 0], [2000, 1024]] },
      ],
      { title: 'bytes', width: 400, height: 200 },
    );
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg.match(/<polyline/g)).toHaveLength(2);
    expect(svg).toContain('n1 &lt;x&gt;');
    const coords = [...svg.matchAll(/points="([^"]+)"/g)].flatMap((m) => m[1]!.split(' ').map((p) => p.split(',').map(Number)));
    for (const [x, y] of coords) {
      expect(x).toBeGreaterThanOrEqual(0);
      expect(x).toBeLessThanOrEqual(400);
      expect(y).toBeGreaterThanOrEqual(0);
      expect(y).toBeLessThanOrEqual(200);
    }
    const md = renderMarkdown({ name: 'x', title: 'X', summary: 's', checks: [{ name: 'c1', ok: true, detail: 'd' }, { name: 'c2', ok: false, detail: 'a|b' }], figures: { fMs: 3 }, timeline: ['0 ms start'] });
    expect(md).toContain('**FAILED**');
    expect(md).toContain('| c2 | **FAILED** | a\\|b |');
    expect(md).toContain('| fMs | 3 |');
  });

  it('write load: longestStall finds a writer stall that starts a few writes after the fault', () => {
    // Writer 0 acks at 0..300 ms, then stalls 1,200 ms on a leaderless tablet; writer 1 never stalls.
    const times = [[0, 100, 200, 300, 1500, 1600], [0, 50, 100, 150, 200, 250, 300, 350]];
    expect(longestStall(times, 150, 2000)).toBe(1200);
    expect(longestStall(times, 1600, 2000)).toBe(100);
  });

  it('lab experiments: the registry names leader-failover and partition-minority', () => {
    expect(EXPERIMENTS.map((e) => e.name)).toEqual(expect.arrayContaining(['leader-failover', 'partition-minority']));
    expect(findExperiment('nope')).toBeUndefined();
  });

  for (const name of ['leader-failover', 'partition-minority', 'partial-partition', 'slow-leader']) {
    it(`lab experiment ${name}: every check holds on real servers and a report is written`, async () => {
      const r = await runExperiment(findExperiment(name)!, opts);
      expect(r.checks.filter((c) => !c.ok), JSON.stringify(r.checks)).toEqual([]);
      expect(passed(r)).toBe(true);
      // The process driver cuts traffic above the WebSocket layer, which still answers keepalive pings
      // and connects.
      if (name === 'partition-minority') expect([r.figures['rpcConnectionsClosedByKeepalive'], r.figures['rpcConnectsTimedOut']]).toEqual([0, 0]);
      const md = fs.readFileSync(r.reportPath!, 'utf8');
      expect(md).toContain('**PASSED**');
      expect(fs.existsSync(r.reportPath!.replace(/\.md$/, '.svg'))).toBe(true);
      // The lab was taken down: no lab.json left behind.
      expect(fs.existsSync(path.join(baseDir, `lab-${name}`, 'lab.json'))).toBe(false);
    }, 150_000);
  }

  it('lab experiment snapshot-isolation: lost update refused, first committer wins, stable snapshot, write skew allowed; serializable refuses the write skew and a phantom; report written', async () => {
    const r = await runExperiment(findExperiment('snapshot-isolation')!, opts);
    expect(r.checks.filter((c) => !c.ok), JSON.stringify(r.checks)).toEqual([]);
    expect(r.checks).toHaveLength(6);
    // Priorities decide who loses: the lower-priority transaction in each pair.
    expect(r.figures['serializableWriteSkewLoser']).toBe('Dave: TXN_CONFLICT');
    expect(r.figures['phantomLoser']).toBe('insert: TXN_CONFLICT');
    const md = fs.readFileSync(r.reportPath!, 'utf8');
    expect(md).toContain('**PASSED**');
    expect(md).toContain('write skew');
    expect(fs.existsSync(path.join(baseDir, 'lab-snapshot-isolation', 'lab.json'))).toBe(false);
  }, 150_000);

  it('lab experiment online-schema-change: ALTER TABLE under a write load with n2 paused — no write fails, the uninformed client writes the new column, n2 catches up', async () => {
    const r = await runExperiment(findExperiment('online-schema-change')!, opts);
    expect(r.checks.filter((c) => !c.ok), JSON.stringify(r.checks)).toEqual([]);
    expect(r.checks).toHaveLength(5);
    expect(r.figures['writesFailed']).toBe(0);
    expect(Number(r.figures['writesWithNewColumn'])).toBeGreaterThan(0);
    expect(fs.existsSync(path.join(baseDir, 'lab-online-schema-change', 'lab.json'))).toBe(false);
  }, 150_000);

  it('lab experiment paused-leader: INSERTs resent as retryable requests while the leader is paused longer than their deadline — none fails, exactly the acknowledged rows', async () => {
    const r = await runExperiment(findExperiment('paused-leader')!, opts);
    expect(r.checks.filter((c) => !c.ok), JSON.stringify(r.checks)).toEqual([]);
    expect(r.checks).toHaveLength(3);
    expect(r.figures['insertsFailed']).toBe(0);
    expect(Number(r.figures['insertsDuringPause'])).toBeGreaterThan(0);
    expect(fs.existsSync(path.join(baseDir, 'lab-paused-leader', 'lab.json'))).toBe(false);
  }, 150_000);

  it('lab experiment paused-status-leader: commits sent to a paused status tablet leader end definitely — the transactions whose records it held alone are proven never committed; none is "outcome unknown"; exactly the committed rows', async () => {
    const r = await runExperiment(findExperiment('paused-status-leader')!, opts);
    expect(r.checks.filter((c) => !c.ok), JSON.stringify(r.checks)).toEqual([]);
    expect(r.checks).toHaveLength(4);
    expect(r.figures['outcomeUnknown']).toBe(0);
    expect(Number(r.figures['provenNeverCommitted'])).toBeGreaterThanOrEqual(4);
    expect(fs.existsSync(path.join(baseDir, 'lab-paused-status-leader', 'lab.json'))).toBe(false);
  }, 150_000);

  it('lab experiment mvcc-history: a snapshot reads old versions until every replica\'s history GC passes it, then fails SNAPSHOT_TOO_OLD; an open transaction holds its tablet\'s floor and commits; a dropped column\'s values are collected; the latest data is unchanged', async () => {
    const r = await runExperiment(findExperiment('mvcc-history')!, opts);
    expect(r.checks.filter((c) => !c.ok), JSON.stringify(r.checks)).toEqual([]);
    expect(r.checks).toHaveLength(6);
    expect(Number(r.figures['snapshotTooOld'])).toBeGreaterThan(0);
    expect(fs.existsSync(path.join(baseDir, 'lab-mvcc-history', 'lab.json'))).toBe(false);
  }, 150_000);

  it('lab experiment replica-divergence: a follower\'s silent wrong value goes unseen by clients, the convergence check names exactly its tablet and the follower, and re-creating the replica makes all agree again; a wrong provisional record of an open transaction is named before commit and leaves with the abort', async () => {
    const r = await runExperiment(findExperiment('replica-divergence')!, opts);
    expect(r.checks.filter((c) => !c.ok), JSON.stringify(r.checks)).toEqual([]);
    expect(r.checks).toHaveLength(7);
    expect(Number(r.figures['repairMs'])).toBeGreaterThan(0);
    expect(Number(r.figures['checkMsIntents'])).toBeGreaterThan(0);
    expect(fs.existsSync(path.join(baseDir, 'lab-replica-divergence', 'lab.json'))).toBe(false);
  }, 150_000);

  it('lab experiment wait-on-conflict: a hot counter loses no increment under fail-on-conflict or wait-on-conflict; waiting replaces TXN_CONFLICT', async () => {
    const r = await runExperiment(findExperiment('wait-on-conflict')!, opts);
    expect(r.checks.filter((c) => !c.ok), JSON.stringify(r.checks)).toEqual([]);
    expect(r.checks).toHaveLength(3);
    expect(Number(r.figures['failOnConflictCommits'])).toBeGreaterThan(0);
    expect(Number(r.figures['waitOnConflictCommits'])).toBeGreaterThan(0);
    expect(fs.existsSync(path.join(baseDir, 'lab-wait-on-conflict', 'lab.json'))).toBe(false);
  }, 150_000);
});
