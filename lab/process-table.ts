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
    // Field 3 of /proc/PID/stat, after the parenthesised command name (which may hold spaces).
    const st = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (st === 'Z' || st === 'X' || st === 'x') return 'stopped';
    if (st === 'T' || st === 't') return 'paused';
    return 'running';
  }
  // No /proc (macOS): existence only; a paused process reads as running.
  try {
    process.kill(pid, 0);
    return 'running';
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM' ? 'running' : 'stopped';
  }
}

export function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
  }
}
