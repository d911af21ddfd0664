/**
 * `tessera verify` stopped by SIGTERM or SIGINT kills the server processes it started before it exits:
 * none is left holding the run's addresses (a next run on the same --host_base would fail with
 * EADDRINUSE). Node i listens on 127.0.0.(253+i).
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(__dirname, '..', '..');
const CLI = path.join(ROOT, 'dist', 'cli', 'main.js');
const DIR = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-verify-signal-it-'));
afterAll(() => {
  if (!process.env['TESSERA_KEEP_TEST_DATA']) fs.rmSync(DIR, { recursive: true, force: true });
});
const HOST_BASE = 253;

/** Live (not zombie) processes whose parent is `ppid`. */
function childrenOf(ppid: number): number[] {
  const out: number[] = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
    } catch {
      continue;
    }
    // pid (comm) state ppid ...: comm may hold spaces, so split after its closing parenthesis.
    const [state, parent] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(parent) === ppid && state !== 'Z') out.push(Number(d));
  }
  return out;
}

function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

async function until(what: string, cond: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('verify: stopped by a signal', () => {
  for (const [sig, code] of [
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ] as const) {
    it(`verify-signal: ${sig} during a run kills its 4 server processes, exits ${code} and says so`, async () => {
      const reportDir = path.join(DIR, sig);
      const child = spawn(process.execPath, [CLI, 'verify', '--workload', 'register', '--time', '120', '--nemesis', 'none', '--host_base', String(HOST_BASE), '--report_dir', reportDir], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (b: Buffer) => (out += b.toString()));
      child.stderr.on('data', (b: Buffer) => (out += b.toString()));
      const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
      let servers: number[] = [];
      try {
        // The cluster is up and the workload runs once the schedule is printed.
        await until('the run to start its workload', () => /fault window\(s\) scheduled/.test(out), 60_000);
        servers = childrenOf(child.pid!);
        expect(servers.length, out).toBe(4);
        child.kill(sig);
        expect(await exited, out).toBe(code);
        expect(out).toMatch(new RegExp(`verify: ${sig}: killing the run's 4 server process\\(es\\)`));
        await until('the servers to be gone', () => servers.every((p) => !alive(p)), 10_000);
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        // (Orphans are children of init now: kill what was seen.)
        for (const p of [...servers, ...childrenOf(child.pid!)]) if (alive(p)) process.kill(p, 'SIGKILL');
      }
    }, 120_000);
  }
});
