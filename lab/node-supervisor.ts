/**
 * PID 1 of a lab container: runs the node's servers (master and/or tserver) as children, prefixes
 * their output lines with the role so `docker logs` tells them apart, forwards SIGTERM/SIGINT, and
 * exits once every child has exited. SIGUSR2 starts again the servers that exited (the lab killed
 * one server of the node alone and now starts it). A container is one node, as in `docker run … yugabyted`.
 *
 *   node node-supervisor.js ENTRY ROLE ARG… [::: ROLE ARG…]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { serverEnv } from '../common/server-env';

export const SUPERVISOR_GROUP_SEPARATOR = ':::';
/** After SIGTERM, children get this long before SIGKILL (docker stop's own timeout is the outer bound). */
const CHILD_GRACE_MS = 8_000;
/** A line longer than this is written out in pieces rather than buffered without bound. */
const LINE_BYTES_MAX = 64 * 1024;

export function splitGroups(args: readonly string[]): string[][] {
  const groups: string[][] = [[]];
  for (const a of args) {
    if (a === SUPERVISOR_GROUP_SEPARATOR) groups.push([]);
    else groups[groups.length - 1]!.push(a);
  }
  return groups.filter((g) => g.length > 0);
}

function pipePrefixed(src: NodeJS.ReadableStream, dst: NodeJS.WritableStream, prefix: string): void {
  let carry = '';
  src.on('data', (c: Buffer) => {
    carry += c.toString('utf8');
    const lines = carry.split('\n');
    carry = lines.pop() ?? '';
    for (const l of lines) dst.write(`${prefix}${l}\n`);
    if (carry.length > LINE_BYTES_MAX) {
      dst.write(`${prefix}${carry}\n`);
      carry = '';
    }
  });
  src.on('end', () => {
    if (carry) dst.write(`${prefix}${carry}\n`);
  });
}

/** The line the supervisor logs when one of its servers ends (serverExitSince reads it back). */
export function exitLine(role: string, code: number | null, sig: NodeJS.Signals | null): string {
  return `[supervisor] ${role} ${sig ? `killed by ${sig}` : `exited with status ${String(code)}`}`;
}

/**
 * In a container's log read with Docker's timestamps (`2026-12-05T00:45:52.866123456Z line`), how
 * `role` ended at or after `sinceMs` (ms since the epoch) by the supervisor's line ("exited with
 * status 1", "killed by SIGKILL"); undefined when there is none. Lines without a readable timestamp
 * are skipped.
 */
export function serverExitSince(timestampedLog: string, role: string, sinceMs: number): string | undefined {
  const prefix = `[supervisor] ${role} `;
  for (const line of timestampedLog.split('\n')) {
    const sp = line.indexOf(' ');
    if (sp < 0) continue;
    const text = line.slice(sp + 1);
    if (!text.startsWith(prefix) || !/^(exited with status|killed by) /.test(text.slice(prefix.length))) continue;
    const at = Date.parse(line.slice(0, sp));
    if (Number.isFinite(at) && at >= sinceMs) return text.slice(prefix.length);
  }
  return undefined;
}

/** Signal that asks the supervisor to start again every server of the node that is not running. */
export const SUPERVISOR_RESPAWN_SIGNAL = 'SIGUSR2';

function main(argv: string[]): void {
  const [entry, ...rest] = argv;
  const groups = splitGroups(rest);
  if (!entry || groups.length === 0) {
    process.stderr.write('usage: node-supervisor.js ENTRY ROLE ARG… [::: ROLE ARG…]\n');
    process.exit(2);
  }
  // One slot per server; a slot is refilled when the lab starts a server it killed alone (driver
  // kill/start with a role), so the container lives as long as one of its servers does.
  const children: ChildProcess[] = [];
  /** Per server: its last run ended badly (cleared when the server is started again). */
  const failed: boolean[] = groups.map(() => false);
  let stopping = false;
  const exited = (c: ChildProcess): boolean => c.exitCode !== null || c.signalCode !== null;
  const spawnGroup = (i: number): void => {
    const g = groups[i]!;
    const role = g[0]!;
    failed[i] = false;
    const child = spawn(process.execPath, [entry, ...g], { stdio: ['ignore', 'pipe', 'pipe'], env: serverEnv() });
    pipePrefixed(child.stdout!, process.stdout, `[${role}] `);
    pipePrefixed(child.stderr!, process.stderr, `[${role}] `);
    child.on('exit', (code, sig) => {
      process.stdout.write(`${exitLine(role, code, sig)}\n`);
      if (!stopping && code !== 0) failed[i] = true;
      if (children.every(exited)) process.exit(failed.some(Boolean) ? 1 : 0);
    });
    children[i] = child;
  };
  groups.forEach((_, i) => spawnGroup(i));
  const stop = (sig: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`[supervisor] ${sig}: stopping ${groups.map((g) => g[0]).join(', ')}\n`);
    for (const c of children) {
      c.kill('SIGTERM');
      // A server paused alone (lab pause --role: SIGSTOP) acts on SIGTERM only once continued.
      c.kill('SIGCONT');
    }
    setTimeout(() => {
      for (const c of children) c.kill('SIGKILL');
    }, CHILD_GRACE_MS).unref();
  };
  // PID 1 ignores signals it has no handler for, so these handlers are what makes `docker stop` work.
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on(SUPERVISOR_RESPAWN_SIGNAL, () => {
    if (stopping) return;
    groups.forEach((g, i) => {
      if (!exited(children[i]!)) return;
      process.stdout.write(`[supervisor] ${SUPERVISOR_RESPAWN_SIGNAL}: starting ${g[0]!} again\n`);
      spawnGroup(i);
    });
  });
}

if (require.main === module) main(process.argv.slice(2));
