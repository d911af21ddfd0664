/**
 * A throwaway PostgreSQL for `bench --vs postgres`: initdb in a temp directory, `postgres` on
 * 127.0.0.1 at a free port with its unix socket in that directory and its default settings (fsync
 * on), stopped and removed at the end, also when the benchmark is stopped by a signal (exit-guard.ts).
 * PostgreSQL refuses to run as root, so under root it runs as the `postgres` user (or `nobody`).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { guardChildren } from './exit-guard';
import { DbError, ErrorCode } from '../common/errors';

export const POSTGRES_NOT_INSTALLED = 'PostgreSQL (initdb, postgres) not found on PATH or in /usr/lib/postgresql/*/bin; install it: apt-get install postgresql';

/** The directory holding `initdb` and `postgres`: PATH first, then the newest /usr/lib/postgresql/N/bin. */
export function findPostgresBin(pathEnv = process.env['PATH'] ?? ''): string | undefined {
  const has = (dir: string): boolean => ['initdb', 'postgres'].every((b) => fs.existsSync(path.join(dir, b)));
  for (const dir of pathEnv.split(':').filter(Boolean)) if (has(dir)) return dir;
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a)) : [];
  return versions.map((v) => path.join(root, v, 'bin')).find(has);
}

/** uid/gid to run PostgreSQL as: ours unless we are root, then `postgres` (or `nobody`). */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ['postgres', 'nobody']) {
    try {
      const id = (flag: string): number => Number(execFileSync('id', [flag, name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
      return { uid: id('-u'), gid: id('-g') };
    } catch {
      // no such user: try the next
    }
  }
  throw new DbError(ErrorCode.INVALID_ARGUMENT, 'running as root and neither a postgres nor a nobody user exists to run PostgreSQL as');
}

/** A TCP port on 127.0.0.1 nobody listens on, from `first` up. */
export async function freePort(first: number): Promise<number> {
  for (let port = first; port < first + 200; port++) {
    const free = await new Promise<boolean>((resolve) => {
      const s = net.createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new DbError(ErrorCode.INVALID_ARGUMENT, `no free port in ${first}-${first + 199} for PostgreSQL`);
}

export class LocalPostgres {
  readonly baseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-bench-pg-'));
  port = 0;
  readonly user = 'postgres';
  private child: ChildProcess | undefined;
  private unguard: (() => void) | undefined;

  constructor(private readonly binDir: string) {}

  /** The postmaster's pid (its backends are its children), while it runs. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  async start(firstPort = 55432): Promise<void> {
    this.unguard ??= guardChildren(() => this.killNow());
    const as = runAs();
    if (as) fs.chownSync(this.baseDir, as.uid, as.gid);
    const data = path.join(this.baseDir, 'data');
    const opts = { ...(as ?? {}), cwd: this.baseDir, encoding: 'utf8' as const };
    try {
      execFileSync(path.join(this.binDir, 'initdb'), ['-D', data, '-U', this.user, '--auth=trust', '--no-instructions', '-E', 'UTF8', '--locale=C'], { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      const err = e as { stderr?: string; message: string };
      throw new DbError(ErrorCode.INVALID_ARGUMENT, `initdb failed: ${(err.stderr ?? err.message).trim().slice(0, 400)}`);
    }
    this.port = await freePort(firstPort);
    const log = path.join(this.baseDir, 'postgres.log');
    const fd = fs.openSync(log, 'a');
    if (as) fs.fchownSync(fd, as.uid, as.gid);
    this.child = spawn(path.join(this.binDir, 'postgres'), ['-D', data, '-h', '127.0.0.1', '-p', String(this.port), '-k', this.baseDir, '-c', 'max_connections=200'], { ...(as ?? {}), cwd: this.baseDir, stdio: ['ignore', fd, fd] });
    fs.closeSync(fd);
    const end = Date.now() + 30_000;
    for (;;) {
      if (await this.accepts()) return;
      if (this.child.exitCode !== null || Date.now() > end) {
        throw new DbError(ErrorCode.INVALID_ARGUMENT, `postgres did not start: ${fs.readFileSync(log, 'utf8').trim().split('\n').slice(-3).join(' | ')}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** Whether the server takes TCP connections (postgres logs "ready" after it listens). */
  private async accepts(): Promise<boolean> {
    if (!fs.readFileSync(path.join(this.baseDir, 'postgres.log'), 'utf8').includes('ready to accept connections')) return false;
    return new Promise<boolean>((resolve) => {
      const s = net.connect(this.port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
  }

  private killNow(): void {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    fs.rmSync(this.baseDir, { recursive: true, force: true });
  }

  /** Fast shutdown (SIGINT), SIGKILL after 10 s, then the data directory goes. */
  async stop(): Promise<void> {
    this.unguard?.();
    this.unguard = undefined;
    const c = this.child;
    if (c && c.exitCode === null && c.signalCode === null) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => c.kill('SIGKILL'), 10_000);
        c.once('exit', () => {
          clearTimeout(t);
          resolve();
        });
        c.kill('SIGINT');
      });
    }
    fs.rmSync(this.baseDir, { recursive: true, force: true });
  }
}
