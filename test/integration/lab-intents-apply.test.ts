/**
 * The defining experiment through the command a lab user runs:
 * `tessera lab experiment intents-apply` with small sizes on real processes. It exits 0 only when
 * every check held (intents on all replicas while open; n1/n2 apply at commit, n0 after its delay;
 * reads complete right after commit; equal RegularDB digests at the end) and writes its report.
 */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

describe('lab experiment intents-apply', () => {
  it('experiment intents-apply: every check holds on a 3-node process lab and a report with a chart is written', () => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-intents-apply-'));
    try {
      const r = spawnSync(process.execPath, ['dist/cli/main.js', 'lab', 'experiment', 'intents-apply', '--rows', '12', '--row-bytes', '32768', '--delay-ms', '4000', '--host_base', '160', '--base_dir', base, '--json'], { cwd: ROOT, encoding: 'utf8', timeout: 150_000 });
      expect(r.status, r.stderr.slice(-3000)).toBe(0);
      const out = JSON.parse(r.stdout) as { passed: boolean; checks: Array<{ name: string; ok: boolean }>; reportPath: string; figures: Record<string, number> };
      expect(out.passed).toBe(true);
      expect(out.checks.length).toBeGreaterThanOrEqual(10);
      expect(out.checks.map((c) => c.name)).toContain("each replica's console records its own apply: n0's lag is the delay, n1's and n2's far below it");
      expect(out.checks.filter((c) => !c.ok)).toEqual([]);
      expect(out.figures['n0ApplyAfterCommitMs']).toBeGreaterThanOrEqual(3500);
      const report = fs.readFileSync(out.reportPath, 'utf8');
      expect(report).toContain('all replicas hold the same RegularDB contents');
      expect(fs.readdirSync(path.dirname(out.reportPath)).some((f) => f.endsWith('.svg'))).toBe(true);
    } finally {
      fs.rmSync(base, { recursive: true, force: true });
    }
  }, 180_000);
});
