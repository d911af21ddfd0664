/**
 * Crash during a chunked apply (real RocksDB, real SIGKILL): after restart the apply resumes and
 * RegularDB holds every row of the transaction exactly once, IntentsDB is empty.
 * Needs `npx tsc -b` first (npm test runs it): the child runs the compiled fixture from dist/.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, expect, it } from 'vitest';

const FIXTURE = path.resolve(__dirname, '../../dist/test/integration/fixtures/docdb-apply-crash.js');
const ROWS = 20_000;
const CHUNK = 2_000;
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-docdb-crash-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

interface Outcome {
  lines: Array<Record<string, unknown>>;
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/** Run the fixture; `killWhen` sees each stdout line and returns true to SIGKILL the child. */
function run(args: string[], killWhen?: (line: Record<string, unknown>) => boolean): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [FIXTURE, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const lines: Array<Record<string, unknown>> = [];
    let buf = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const line = JSON.parse(buf.slice(0, i)) as Record<string, unknown>;
        buf = buf.slice(i + 1);
        lines.push(line);
        if (killWhen?.(line)) child.kill('SIGKILL');
      }
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve({ lines, code, signal, stderr }));
  });
}

it('docdb crash: SIGKILL during a chunked apply, restart resumes, every row applied exactly once', async () => {
  expect(fs.existsSync(FIXTURE), 'run `npx tsc -b` first').toBe(true);
  const dir = path.join(root, 'db');
  const w = await run(['write', dir, String(ROWS)]);
  expect(w.code, w.stderr).toBe(0);
  expect(w.lines[0]).toEqual({ written: ROWS, intentCount: ROWS }); // one packed intent per row (docdb/packed-intent.ts)

  // Kill right after the third chunk is durable: the fourth is then in flight.
  const a = await run(['apply', dir, String(CHUNK)], (l) => typeof l['chunk'] === 'number' && l['chunk'] >= 3 * CHUNK);
  expect(a.signal, a.stderr).toBe('SIGKILL');
  expect(a.lines.some((l) => 'applied' in l)).toBe(false);

  const c = await run(['check', dir]);
  expect(c.code, c.stderr).toBe(0);
  const r = c.lines.at(-1)!;
  // The crash left an unfinished apply with intents still to move.
  expect(r['before']).toMatchObject({ applyStates: 1 });
  expect((r['before'] as { intentCount: number }).intentCount).toBeGreaterThan(0);
  expect((r['before'] as { intentCount: number }).intentCount).toBeLessThan(ROWS);
  expect(r).toMatchObject({ resumed: 1, rows: ROWS, wrong: 0, regularVersions: ROWS * 2, intentsLeft: 0, intentCount: 0, txns: 0 });
});
