/**
 * Smoke run of the side-by-side benchmark (`tessera bench --vs etcd`): ~2 s per workload, 1 round,
 * against tessera (and etcd when its binary is installed; a visible skip line otherwise). Checks that
 * the harness runs end to end and that its JSON and Markdown outputs hold every workload row. Never
 * asserts on speed: the figures of a smoke run on a shared machine mean nothing.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findEtcd } from '../../bench/etcd-cluster';

const CLI = path.resolve(__dirname, '../../dist/cli/main.js');
const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-bench-smoke-'));
const WORKLOADS = ['put-c1', 'put-c16', 'put-c64', 'read-c16', 'txn2-c64'];
const RUN_TIMEOUT_MS = 240_000;

interface Figures {
  rounds: number;
  opsPerSec: { median: number };
}
interface Row {
  workload: string;
  tessera?: Figures;
  etcd?: Figures;
  ratio?: { median: number };
  note?: string;
}

afterAll(() => {
  fs.rmSync(outDir, { recursive: true, force: true });
});

function runBench(): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [CLI, 'bench', '--vs', 'etcd', '--seconds', '2', '--warmup', '1', '--rounds', '1', '--read-keys', '500', '--out', outDir], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    c.stdout.on('data', (b: Buffer) => (out += b.toString()));
    c.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const timer = setTimeout(() => c.kill('SIGKILL'), RUN_TIMEOUT_MS);
    c.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

describe('bench --vs etcd (smoke)', () => {
  it('bench: a short side-by-side run writes JSON and Markdown with a row for every workload', async () => {
    const etcd = findEtcd();
    if (!etcd) process.stdout.write('SKIP etcd side of the smoke run: etcd is not installed (.ci/etcd-setup.sh installs it)\n');
    const { code, out } = await runBench();
    expect(code, out).toBe(0);
    const json = JSON.parse(fs.readFileSync(path.join(outDir, 'vs-etcd-latest.json'), 'utf8')) as { etcd: string; rows: Row[] };
    const md = fs.readFileSync(path.join(outDir, 'vs-etcd-latest.md'), 'utf8');
    expect(json.rows.map((r) => r.workload)).toEqual(WORKLOADS);
    expect(json.etcd).toBe(etcd ? 'ran' : 'skipped');
    for (const r of json.rows) {
      expect(md, `markdown row for ${r.workload}`).toContain(`| ${r.workload} |`);
      if (r.workload === 'txn2-c64') {
        // Either it ran, or it says why it was skipped (transactions not usable in this build).
        expect(r.tessera !== undefined || (r.note ?? '').startsWith('skipped')).toBe(true);
        expect(r.etcd).toBeUndefined();
        continue;
      }
      expect(r.tessera?.rounds, `${r.workload} tessera`).toBe(1);
      expect(r.tessera?.opsPerSec.median, `${r.workload} tessera did some ops`).toBeGreaterThan(0);
      if (etcd) {
        expect(r.etcd?.rounds, `${r.workload} etcd`).toBe(1);
        expect(r.ratio?.median, `${r.workload} ratio`).toBeGreaterThan(0);
      } else {
        expect(r.etcd).toBeUndefined();
      }
    }
    expect(md).toContain('peak RSS');
  }, RUN_TIMEOUT_MS + 30_000);
});
