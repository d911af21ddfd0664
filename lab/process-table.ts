/**
 * What the OS says about a server process we started earlier, possibly from another CLI invocation:
 * running, paused (SIGSTOP) or gone. A pid is only trusted when its command line still names the
 * server's data directory, so a recycled pid is never mistaken for (or signalled as) our server.
 */
import * as fs from 'node:fs';
import type { ServerState } from './cluster-driver';

export function processState(pid: number | undefined, dataDirMarker: string): ServerState {
  if (pid === undefined || pid <= 0) return 'stopped';
  const procDir = `/proc/${pid}`;
  if (fs.existsSync('/proc/self')) {
    let cmdline: string;
    let stat: string;
    try {
      cmdline = fs.readFileSync(`${procDir}/cmdline`, 'utf8');
      stat = fs.readFileSync(`${procDir}/stat`, 'utf8');
    } catch {
      return 'stopped';
    }
    if (!cmdline.split('\0').includes(dataDirMarker)) return 'stopped';
    return procStatState(stat);
  }
  // No /proc (macOS): existence only; a paused process reads as running.
  try {
    process.kill(pid, 0);
    return 'running';
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM' ? 'running' : 'stopped';
  }
}

/**
 * The state a /proc/PID/stat line shows: field 3, after the parenthesised command name (which may hold
 * spaces and parentheses). Self-contained (no imports, no helpers): the Docker driver also runs its
 * source inside a container (docker-in-container.ts).
 */
export function procStatState(stat: string): ServerState {
  const close = stat.lastIndexOf(')');
  const st = close < 0 ? '' : stat.slice(close + 2, close + 3);
  if (st === '' || st === 'Z' || st === 'X' || st === 'x') return 'stopped';
  if (st === 'T' || st === 't') return 'paused';
  return 'running';
}

export function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
  }
}
