/**
 * A throwaway local cluster for benchmarks: 1 master + N tservers as child processes of this script
 * (dist/cli/main.js), on 127.0.0.(hostBase+i) when loopback aliases work, else on shifted ports.
 * Always torn down (SIGKILL) and its temp data removed, also when this process is stopped by SIGINT,
 * SIGTERM or SIGHUP (a `timeout` or Ctrl-C would otherwise leave the servers running on their ports).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { getJson } from '../lab/console-http';
import { loopbackAliasesWork } from '../lab/process-addressing';
import { guardChildren } from './exit-guard';
import { makeDirs } from '../common/fs-dirs';
import { serverEnv } from '../common/server-env';

export interface BenchServer {
  role: 'master' | 'tserver';
  rpcAddress: string;
  /** host:port of its web console (same host as rpcAddress; 7000/9000 shifted like the RPC port). */
  webAddress: string;
  child: ChildProcess;
}

export class BenchCluster {
  readonly servers: BenchServer[] = [];
  masterAddress = '';
  private masterWeb = '';
  readonly baseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-bench-'));
  private unguard: (() => void) | undefined;

  /**
   * noAliasPortShift: port offset used when loopback aliases do not work (keeps callers' ranges apart);
   * tserverNodeArgs: extra node options for tserver i (e.g. --cpu-prof on one of them);
   * logLevel: of every server (default warn; info adds one line per leadership change and the like);
   * cli: the servers' entry point (default this build's dist/cli/main.js; another build's to compare);
   * masterFlags: extra flags of the master.
   */
  async start(tservers: number, hostBase: number, tserverFlags: string[] = [], opts: { noAliasPortShift?: number; tserverNodeArgs?: (i: number) => string[]; logLevel?: string; cli?: string; masterFlags?: string[] } = {}): Promise<void> {
    const logLevel = `--log_level=${opts.logLevel ?? 'warn'}`;
    // Next to this file once built (dist/bench → dist/cli); from the TypeScript source (tests), the build's.
    const built = path.resolve(__dirname, '../cli/main.js');
    const cli = opts.cli ?? (fs.existsSync(built) ? built : path.resolve(__dirname, '../dist/cli/main.js'));
    this.unguard ??= guardChildren(() => this.killAllNow());
    const aliases = await loopbackAliasesWork();
    const host = (i: number): string => (aliases ? `127.0.0.${hostBase + i}` : '127.0.0.1');
    const port = (b: number, i: number): number => b + (aliases ? 0 : (opts.noAliasPortShift ?? 500) + i);
    this.masterAddress = `${host(0)}:${port(7100, 0)}`;
    this.masterWeb = `${host(0)}:${port(7000, 0)}`;
    const run = (role: 'master' | 'tserver', rpcAddress: string, webAddress: string, argv: string[], nodeArgs: string[] = []): void => {
      const fd = fs.openSync(path.join(this.baseDir, `${role}-${rpcAddress}.log`), 'a');
      const child = spawn(process.execPath, [...nodeArgs, cli, role, ...argv], { stdio: ['ignore', fd, fd], env: serverEnv() });
      fs.closeSync(fd);
      this.servers.push({ role, rpcAddress, webAddress, child });
    };
    run('master', this.masterAddress, this.masterWeb, [`--rpc_bind_addresses=${this.masterAddress}`, `--webserver_port=${port(7000, 0)}`, `--fs_data_dirs=${path.join(this.baseDir, 'm0')}`, logLevel, ...(opts.masterFlags ?? [])]);
    for (let i = 0; i < tservers; i++) {
      const addr = `${host(i)}:${port(9100, i)}`;
      run('tserver', addr, `${host(i)}:${port(9000, i)}`, [`--tserver_master_addrs=${this.masterAddress}`, `--rpc_bind_addresses=${addr}`, `--webserver_port=${port(9000, i)}`, `--fs_data_dirs=${path.join(this.baseDir, `t${i}`)}`, logLevel, ...tserverFlags], opts.tserverNodeArgs?.(i));
    }
    const end = Date.now() + 60_000;
    for (;;) {
      try {
        const b = (await getJson(`http://${this.masterWeb}/api/v1/tablet-servers`, 1000)) as { tabletServers: Array<{ alive: boolean }> };
        if (b.tabletServers.filter((t) => t.alive).length >= tservers) return;
      } catch {
        // not up yet
      }
      // A server that exited will not come up: say so now, not after the whole wait.
      const gone = this.servers.find((x) => x.child.exitCode !== null || x.child.signalCode !== null);
      if (gone || Date.now() > end) throw new Error(this.startFailure(gone));
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /**
   * Why start() gave up: the server that exited (or the wait that ran out), the first error its logs
   * name, and where the logs are kept (copied out of baseDir, which stop() removes).
   */
  startFailure(gone?: BenchServer): string {
    const kept = `${this.baseDir}-logs`;
    this.saveLogs(kept);
    const what = gone ? `${gone.role} ${gone.rpcAddress} exited (${gone.child.exitCode !== null ? `code ${gone.child.exitCode}` : String(gone.child.signalCode)})` : 'not every server registered within 60 s';
    const why = this.firstLoggedError();
    return `bench cluster did not come up: ${what}${why ? `; first error logged: ${why}` : ''}; logs kept in ${kept}`;
  }

  /** The first error- or fatal-level line of the servers' logs (JSON lines), as "file: message (err)". */
  firstLoggedError(): string | undefined {
    for (const f of fs.readdirSync(this.baseDir).filter((x) => x.endsWith('.log')).sort()) {
      for (const line of fs.readFileSync(path.join(this.baseDir, f), 'utf8').split('\n')) {
        let rec: { level?: unknown; msg?: unknown; err?: { message?: unknown } };
        try {
          rec = JSON.parse(line) as typeof rec;
        } catch {
          // A plain line (a banner, a torn write, a usage error on stderr): an error line only if it says so.
          if (/error/i.test(line)) return `${f}: ${line.trim().slice(0, 300)}`;
          continue;
        }
        if (typeof rec.level === 'number' && rec.level >= 50) return `${f}: ${String(rec.msg)}${typeof rec.err?.message === 'string' ? ` (${rec.err.message})` : ''}`;
      }
    }
    return undefined;
  }

  /**
   * Tablet leadership changes the tservers logged in [fromMs, toMs] (Unix ms): lines "became leader"
   * (servers must run at log level info; see start()).
   */
  leaderChangesBetween(fromMs: number, toMs = Number.POSITIVE_INFINITY): number {
    return this.logTimes('tserver-', '"became leader"').filter((t) => t >= fromMs && t <= toMs).length;
  }

  /**
   * Wait until tablet leadership has been quiet for `quietMs`: no tserver logged "became leader" and
   * the master logged no leader-balancing move (servers at log level info). A new table's leaders
   * land where the elections put them and the master's balancer moves some of them a second or two
   * later; a benchmark that starts meanwhile would count those planned moves as elections under load.
   * Gives up after `maxMs`; answers how long it waited and whether leadership settled.
   */
  async waitLeadersSettled(quietMs: number, maxMs: number): Promise<{ waitedMs: number; settled: boolean }> {
    const start = Date.now();
    for (;;) {
      const last = Math.max(0, ...this.logTimes('tserver-', '"became leader"'), ...this.logTimes('master-', '"balancing leaders: moving a tablet leader"'));
      const now = Date.now();
      if (now - last >= quietMs) return { waitedMs: now - start, settled: true };
      if (now - start >= maxMs) return { waitedMs: now - start, settled: false };
      await new Promise((r) => setTimeout(r, Math.min(250, quietMs)));
    }
  }

  /** Times (Unix ms) of the log lines containing `text` in the logs whose names start with `prefix`. */
  private logTimes(prefix: string, text: string): number[] {
    const times: number[] = [];
    for (const f of fs.readdirSync(this.baseDir)) {
      if (!f.startsWith(prefix) || !f.endsWith('.log')) continue;
      for (const line of fs.readFileSync(path.join(this.baseDir, f), 'utf8').split('\n')) {
        if (!line.includes(text)) continue;
        try {
          const rec = JSON.parse(line) as { time?: unknown };
          if (typeof rec.time === 'number') times.push(rec.time);
        } catch {
          // a torn last line
        }
      }
    }
    return times;
  }

  /** Copy every server's log into `dir` (before stop() removes them); the files copied. */
  saveLogs(dir: string): string[] {
    makeDirs(dir);
    const logs = fs.readdirSync(this.baseDir).filter((f) => f.endsWith('.log'));
    for (const f of logs) fs.copyFileSync(path.join(this.baseDir, f), path.join(dir, f));
    return logs;
  }

  tservers(): BenchServer[] {
    return this.servers.filter((s) => s.role === 'tserver');
  }

  /** Resident set size of a process from /proc (Linux); undefined elsewhere. */
  static rssBytes(pid: number | undefined): number | undefined {
    if (!pid) return undefined;
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
      return m ? Number(m[1]) * 1024 : undefined;
    } catch {
      return undefined;
    }
  }

  /** Synchronous SIGKILL of every server and removal of the data (signal and exit paths). */
  private killAllNow(): void {
    for (const s of this.servers) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
    fs.rmSync(this.baseDir, { recursive: true, force: true });
  }

  /**
   * Kill every server (SIGKILL: a benchmark's servers hold nothing worth a clean stop). `graceMs`: send
   * SIGTERM first and wait that long, so a server run with `--cpu-prof` writes its profile at exit.
   */
  async stop(o: { graceMs?: number } = {}): Promise<void> {
    this.unguard?.();
    this.unguard = undefined;
    await Promise.all(
      this.servers.map(
        (s) =>
          new Promise<void>((r) => {
            if (s.child.exitCode !== null || s.child.signalCode !== null) return r();
            s.child.once('exit', () => r());
            if (!o.graceMs) return void s.child.kill('SIGKILL');
            s.child.kill('SIGTERM');
            setTimeout(() => s.child.kill('SIGKILL'), o.graceMs).unref();
          }),
      ),
    );
    fs.rmSync(this.baseDir, { recursive: true, force: true });
  }
}
