/**
 * The defining experiment through the command a lab user runs:
 * `tessera lab experiment intents-apply` with small sizes on real processes. It exits 0 only when
 * every check held (the transaction in the IntentsDB memtables of all replicas while open, the same
 * bytes on each; n1's/n2's RegularDB memtables grown by as much at commit, n0's unchanged until its
 * delay ends; reads complete right after commit; equal RegularDB digests at the end) and writes its
 * report in Markdown and HTML with the step charts inline.
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
      const r = spawnSync(process.execPath, ['dist/cli/main.js', 'lab', 'experiment', 'intents-apply', '--rows', '12', '--row-bytes', '32768', '--delay-ms', '4000', '--host_base', '5', '--base_dir', base, '--json'], { cwd: ROOT, encoding: 'utf8', timeout: 150_000 });
      expect(r.status, r.stderr.slice(-3000)).toBe(0);
      const out = JSON.parse(r.stdout) as { passed: boolean; checks: Array<{ name: string; ok: boolean }>; reportPath: string; figures: Record<string, number> };
      expect(out.passed).toBe(true);
      expect(out.checks.length).toBeGreaterThanOrEqual(10);
      const names = out.checks.map((c) => c.name);
      expect(names).toContain("each replica's console records its own apply: n0's lag is the delay, n1's and n2's far below it");
      // The figures the blog reads, not only counts: memtable bytes per tablet and node.
      expect(names).toContain("while open, each tablet's IntentsDB memtable is the same size on the 3 nodes (within 5 %)");
      expect(names).toContain("right after the commit, n1's RegularDB memtable of each tablet grew by about its IntentsDB memtable");
      expect(names).toContain("until n0's delay ends, n0's RegularDB memtable stays as it was");
      const written = 12 * 32768;
      expect(out.figures['n0IntentsMemtableOpenBytes']).toBeGreaterThanOrEqual(written);
      expect(out.figures['n1RegularMemtableGrowthBytes']).toBeGreaterThanOrEqual(0.8 * written);
      expect(out.checks.filter((c) => !c.ok)).toEqual([]);
      expect(out.figures['n0ApplyAfterCommitMs']).toBeGreaterThanOrEqual(3500);
      const report = fs.readFileSync(out.reportPath, 'utf8');
      expect(report).toContain('all replicas hold the same RegularDB contents');
      const files = fs.readdirSync(path.dirname(out.reportPath));
      expect(files.filter((f) => f.endsWith('.svg')).length).toBe(2);
      const html = fs.readFileSync(out.reportPath.replace(/\.md$/, '.html'), 'utf8');
      // Self-contained: both step charts inline, the commit and the end of the delay marked, seconds on the axis.
      expect(html.match(/<svg /g)).toHaveLength(2);
      expect(html).toContain('>commit<');
      expect(html).toContain('delay ends');
      expect(html).toContain('>seconds<');
    } finally {
      fs.rmSync(base, { recursive: true, force: true });
    }
  }, 180_000);

  it("experiment intents-apply --via sql: the blog's statements through n1's port 5433 (a real PostgreSQL client), and every check holds", () => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-intents-apply-sql-'));
    try {
      const r = spawnSync(process.execPath, ['dist/cli/main.js', 'lab', 'experiment', 'intents-apply', '--via', 'sql', '--rows', '12', '--row-bytes', '32768', '--delay-ms', '4000', '--host_base', '97', '--base_dir', base, '--json'], { cwd: ROOT, encoding: 'utf8', timeout: 150_000 });
      expect(r.status, r.stderr.slice(-3000)).toBe(0);
      const out = JSON.parse(r.stdout) as { passed: boolean; summary: string; checks: Array<{ name: string; ok: boolean; detail: string }>; timeline: unknown; reportPath: string };
      expect(out.checks.filter((c) => !c.ok)).toEqual([]);
      expect(out.passed).toBe(true);
      expect(out.summary).toContain("the blog's SQL through n1's port 5433");
      expect(out.checks.find((c) => c.name.startsWith('right after commit, reads at the leaders'))?.detail).toContain('12/12 rows read back intact (md5 of each value)');
      const report = fs.readFileSync(out.reportPath, 'utf8');
      expect(report).toContain("insert into demo(value) select dbms_random.string('P',32768) from generate_series(1,12);");
    } finally {
      fs.rmSync(base, { recursive: true, force: true });
    }
  }, 180_000);

  it('experiment intents-apply: --via takes client or sql, anything else exits 1 naming the option', () => {
    const r = spawnSync(process.execPath, ['dist/cli/main.js', 'lab', 'experiment', 'intents-apply', '--via', 'carrier-pigeon'], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('--via must be client or sql');
  });
});
