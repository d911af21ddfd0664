/**
 * Pause/resume of one server of a Docker lab node and the per-server states `lab status` shows,
 * without an engine: the plan (docker pause vs SIGSTOP inside the container), how container and
 * process states combine, the /proc stat rule, and the in-container state script run here against
 * the real node supervisor with stand-in servers (the supervisor's pid plays PID 1).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { freezePlan, type FreezeInput, needsProcessStates, procStatState, serverStatesIn, waitUntil } from '../../../lab';
import { parseRoleStates, ROLE_STATES_SCRIPT } from '../../../lab/docker-in-container';

const ROOT = path.resolve(__dirname, '../../..');
const BOTH = ['master', 'tserver'] as const;

function plan(x: Partial<FreezeInput> & Pick<FreezeInput, 'op' | 'container'>) {
  return freezePlan({ node: 'n0', roles: BOTH, role: undefined, ...x });
}

describe('lab docker: pause/resume plan and server states', () => {
  it('lab docker: pause of one role of a two-server container is SIGSTOP to it alone; resume is SIGCONT to it', () => {
    expect(plan({ op: 'pause', role: 'tserver', container: 'running' })).toEqual([{ type: 'signal', signal: 'SIGSTOP', roles: ['tserver'] }]);
    expect(plan({ op: 'resume', role: 'master', container: 'running' })).toEqual([{ type: 'signal', signal: 'SIGCONT', roles: ['master'] }]);
  });

  it('lab docker: pause without a role, or of a container\'s only server, is docker pause', () => {
    expect(plan({ op: 'pause', container: 'running' })).toEqual([{ type: 'docker-pause' }]);
    expect(plan({ op: 'pause', roles: ['tserver'], role: 'tserver', container: 'running' })).toEqual([{ type: 'docker-pause' }]);
    expect(plan({ op: 'resume', roles: ['tserver'], role: 'tserver', container: 'paused' })).toEqual([{ type: 'docker-unpause' }]);
  });

  it('lab docker: resume of a whole two-server container unpauses it and thaws a server paused alone', () => {
    expect(plan({ op: 'resume', container: 'paused' })).toEqual([{ type: 'docker-unpause' }, { type: 'signal', signal: 'SIGCONT', roles: ['master', 'tserver'] }]);
    expect(plan({ op: 'resume', container: 'running' })).toEqual([{ type: 'signal', signal: 'SIGCONT', roles: ['master', 'tserver'] }]);
  });

  it('lab docker: nothing to do on a stopped container or an already frozen one; one role cannot thaw inside a docker-paused container', () => {
    for (const op of ['pause', 'resume'] as const) for (const role of [undefined, 'tserver' as const]) expect(plan({ op, role, container: 'stopped' })).toEqual([]);
    expect(plan({ op: 'pause', role: 'tserver', container: 'paused' })).toEqual([]);
    expect(plan({ op: 'pause', container: 'paused' })).toEqual([]);
    expect(() => plan({ op: 'resume', role: 'tserver', container: 'paused' })).toThrow(/paused as a whole .*without --role/);
  });

  it('lab docker: a server\'s state is its process state inside a running container, else the container\'s', () => {
    expect(serverStatesIn('running', BOTH, { master: 'running', tserver: 'stopped' })).toEqual({ master: 'running', tserver: 'stopped' });
    expect(serverStatesIn('running', BOTH, { master: 'paused', tserver: 'running' })).toEqual({ master: 'paused', tserver: 'running' });
    expect(serverStatesIn('paused', BOTH, { master: 'running', tserver: 'running' })).toEqual({ master: 'paused', tserver: 'paused' });
    expect(serverStatesIn('stopped', BOTH, undefined)).toEqual({ master: 'stopped', tserver: 'stopped' });
    // Unreadable (the container froze or stopped meanwhile): the container's state.
    expect(serverStatesIn('running', BOTH, undefined)).toEqual({ master: 'running', tserver: 'running' });
    // A container's only server runs exactly while the container does.
    expect(serverStatesIn('running', ['tserver'], undefined)).toEqual({ tserver: 'running' });
    expect(needsProcessStates('running', BOTH)).toBe(true);
    expect(needsProcessStates('paused', BOTH)).toBe(false);
    expect(needsProcessStates('running', ['tserver'])).toBe(false);
  });

  it('lab: /proc/PID/stat state letters map to running, paused, stopped (command names may hold spaces and parentheses)', () => {
    expect(procStatState('12 (node) S 1 12 12 0')).toBe('running');
    expect(procStatState('12 (node) R 1 12 12 0')).toBe('running');
    expect(procStatState('12 (a) b) T 1 12 12 0')).toBe('paused');
    expect(procStatState('12 (x y) t 1')).toBe('paused');
    expect(procStatState('12 (node) Z 1')).toBe('stopped');
    expect(procStatState('garbage')).toBe('stopped');
  });

  it('lab docker: the state script\'s reply names every role asked about, else a clear error', () => {
    expect(parseRoleStates('noise\n{"master":"running","tserver":"paused"}\n', BOTH)).toEqual({ master: 'running', tserver: 'paused' });
    expect(() => parseRoleStates('{"master":"running"}', BOTH)).toThrow(/no answer for the tserver/);
    expect(() => parseRoleStates('OCI runtime exec failed', ['master'])).toThrow(/no answer for the master/);
  });
});

describe('lab docker: server states read among the supervisor\'s children', () => {
  let sup: ChildProcess | undefined;
  let dir: string | undefined;
  afterEach(() => {
    if (sup && sup.exitCode === null && sup.signalCode === null) sup.kill('SIGKILL');
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('lab docker: the state script sees a server paused alone (SIGSTOP) and one killed alone; the supervisor stops a paused server at once', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-states-'));
    const entry = path.join(dir, 'entry.js');
    fs.writeFileSync(entry, `require('fs').writeFileSync(require('path').join(${JSON.stringify(dir)}, process.argv[2] + '.pid'), String(process.pid)); setInterval(() => {}, 1000);`);
    const pidOf = async (role: string): Promise<number | undefined> => {
      try {
        return Number(fs.readFileSync(path.join(dir!, `${role}.pid`), 'utf8'));
      } catch {
        return undefined;
      }
    };
    sup = spawn(process.execPath, [path.join(ROOT, 'dist/lab/node-supervisor.js'), entry, 'master', ':::', 'tserver'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    sup.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    const tserver = await waitUntil(() => pidOf('tserver'), { timeoutMs: 10_000, what: 'the tserver stand-in to start' });
    const master = await waitUntil(() => pidOf('master'), { timeoutMs: 10_000, what: 'the master stand-in to start' });
    // Only the supervisor's children count (other processes here may have a tserver argv too).
    const states = (): Record<string, string> => parseRoleStates(execFileSync(process.execPath, ['-e', ROLE_STATES_SCRIPT, String(sup!.pid), ...BOTH], { encoding: 'utf8', timeout: 10_000 }), BOTH);
    expect(states()).toEqual({ master: 'running', tserver: 'running' });
    process.kill(tserver, 'SIGSTOP');
    await waitUntil(async () => states().tserver === 'paused' || undefined, { timeoutMs: 5_000, what: 'the tserver to read as paused' });
    expect(states().master).toBe('running');
    process.kill(master, 'SIGKILL');
    await waitUntil(async () => states().master === 'stopped' || undefined, { timeoutMs: 5_000, what: 'the master to read as stopped' });
    expect(states().tserver).toBe('paused');
    // SIGTERM to the supervisor also continues the paused server, so SIGTERM ends it (not the SIGKILL after the grace).
    const closed = new Promise<void>((resolve) => sup!.on('close', () => resolve()));
    sup.kill('SIGTERM');
    await closed;
    expect(out).toContain('master killed by SIGKILL');
    expect(out).toContain('tserver killed by SIGTERM');
  }, 30_000);
});
