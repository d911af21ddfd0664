/**
 * A throwaway 3-member etcd cluster for the side-by-side benchmark: the `etcd` binary of the Debian
 * package `etcd-server` (see .ci/etcd-setup.sh), member i on 127.0.0.(hostBase+i) when loopback
 * aliases work (else 127.0.0.1 with ports shifted by 10*i), data on disk in a temp dir, etcd's
 * default fsync behaviour (no unsafe flags). Always torn down (SIGKILL) and its data removed.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loopbackAliasesWork } from '../lab/process-addressing';
import { guardChildren } from './exit-guard';
import { EtcdHttp } from './etcd-http';

const CLIENT_PORT = 26379;
const PEER_PORT = 26380;
const START_TIMEOUT_MS = 60_000;
const POLL_MS = 200;

/** Path of the etcd binary, or undefined when it is not installed. */
export function findEtcd(): string | undefined {
  for (const p of [process.env['ETCD_BIN'], '/usr/bin/etcd', '/usr/local/bin/etcd']) {
    if (p && fs.existsSync(p)) return p;
  }
  try {
    const p = execFileSync('sh', ['-c', 'command -v etcd'], { encoding: 'utf8' }).trim();
    return p || undefined;
  } catch {
    return undefined;
  }
}

export interface EtcdMember {
  name: string;
  clientUrl: string;
  child: ChildProcess;
}

export class EtcdCluster {
  readonly members: EtcdMember[] = [];
  readonly baseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-bench-etcd-'));
  /** Client URL of the leader once start() returns (the load goes there: etcd's best case). */
  leaderUrl = '';

  private unguard: (() => void) | undefined;

  constructor(private readonly bin: string) {}

  async start(hostBase: number, size = 3): Promise<void> {
    this.unguard ??= guardChildren(() => {
      for (const m of this.members) if (m.child.exitCode === null && m.child.signalCode === null) m.child.kill('SIGKILL');
      fs.rmSync(this.baseDir, { recursive: true, force: true });
    });
    const aliases = await loopbackAliasesWork();
    const host = (i: number): string => (aliases ? `127.0.0.${hostBase + i}` : '127.0.0.1');
    const port = (b: number, i: number): number => b + (aliases ? 0 : 10 * i);
    const names = Array.from({ length: size }, (_, i) => `m${i}`);
    const initial = names.map((n, i) => `${n}=http://${host(i)}:${port(PEER_PORT, i)}`).join(',');
    for (let i = 0; i < size; i++) {
      const clientUrl = `http://${host(i)}:${port(CLIENT_PORT, i)}`;
      const peerUrl = `http://${host(i)}:${port(PEER_PORT, i)}`;
      const fd = fs.openSync(path.join(this.baseDir, `${names[i]}.log`), 'a');
      const child = spawn(
        this.bin,
        [
          `--name=${names[i]}`,
          `--data-dir=${path.join(this.baseDir, names[i] ?? `m${i}`)}`,
          `--listen-client-urls=${clientUrl}`,
          `--advertise-client-urls=${clientUrl}`,
          `--listen-peer-urls=${peerUrl}`,
          `--initial-advertise-peer-urls=${peerUrl}`,
          `--initial-cluster=${initial}`,
          '--initial-cluster-state=new',
          '--initial-cluster-token=tessera-bench',
          '--log-level=error',
          '--logger=zap',
        ],
        { stdio: ['ignore', fd, fd] },
      );
      fs.closeSync(fd);
      this.members.push({ name: names[i] ?? `m${i}`, clientUrl, child });
    }
    await this.waitLeader();
  }

  private async waitLeader(): Promise<void> {
    const end = Date.now() + START_TIMEOUT_MS;
    let why = 'no answer';
    while (Date.now() < end) {
      const dead = this.members.find((m) => m.child.exitCode !== null);
      if (dead) throw new Error(`etcd member ${dead.name} exited with ${String(dead.child.exitCode)}; log in ${this.baseDir}`);
      for (const m of this.members) {
        const c = new EtcdHttp(m.clientUrl);
        try {
          const s = await c.status();
          if (s.leaderId && s.leaderId !== '0' && s.leaderId === s.memberId) {
            // A put through the leader proves the cluster has a quorum that commits.
            await c.put('tessera-bench/ready', '1');
            this.leaderUrl = m.clientUrl;
            return;
          }
          why = `leader ${s.leaderId || 'unknown'}`;
        } catch (e) {
          why = e instanceof Error ? e.message : String(e);
        } finally {
          c.close();
        }
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    throw new Error(`etcd cluster had no leader within ${START_TIMEOUT_MS} ms (${why}); logs in ${this.baseDir}`);
  }

  pids(): Array<number | undefined> {
    return this.members.map((m) => m.child.pid);
  }

  async stop(): Promise<void> {
    this.unguard?.();
    this.unguard = undefined;
    await Promise.all(
      this.members.map(
        (m) =>
          new Promise<void>((r) => {
            if (m.child.exitCode !== null || m.child.signalCode !== null) return r();
            m.child.once('exit', () => r());
            m.child.kill('SIGKILL');
          }),
      ),
    );
    fs.rmSync(this.baseDir, { recursive: true, force: true });
  }
}
