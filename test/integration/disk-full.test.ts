/**
 * Disk full: every tserver's data directory is its own small tmpfs, and 100 KiB upserts go on until
 * the disks are full. A tablet replica that cannot write stops (FAILED) and its tserver logs why;
 * writes fail meanwhile. Then the filesystems grow, every tserver restarts (kill -9), and every
 * acknowledged row reads back whole: nothing acknowledged is lost to a full disk.
 *
 * Needs permission to mount a tmpfs (root with CAP_SYS_ADMIN, as on the CI machine); elsewhere the
 * test is skipped and says why.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TesseraClient } from '../../client/tessera-client';
import { ProcCluster, waitFor } from './cluster-harness';

const DISK_MB = 24;
const GROWN_MB = 256;
const ROW_BYTES = 100 * 1024;
/** Bounds of the fill loop: rows, wall time, and failed writes in a row before it stops. */
const ROWS_MAX = 2_000;
const FILL_MS_MAX = 90_000;
const FAILURES_IN_A_ROW = 3;
const value = (i: number): string => `${i}:`.padEnd(ROW_BYTES, String.fromCharCode(97 + (i % 26)));

function run(cmd: string, args: string[]): { ok: boolean; why: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 10_000 });
  return { ok: r.status === 0, why: (r.stderr || r.stdout || String(r.error ?? `exit ${String(r.status)}`)).trim() };
}

/** Whether a tmpfs can be mounted here (tried on a scratch directory), and why not. */
function tmpfsMountable(): { ok: boolean; why: string } {
  const probe = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-mount-probe-'));
  try {
    const m = run('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe]);
    if (m.ok) run('umount', [probe]);
    return m;
  } finally {
    fs.rmSync(probe, { recursive: true, force: true });
  }
}

const mountable = process.platform === 'linux' ? tmpfsMountable() : { ok: false, why: 'not Linux' };
const mounted: string[] = [];
let cluster: ProcCluster | undefined;
let client: TesseraClient | undefined;

afterAll(async () => {
  await client?.close().catch(() => undefined);
  if (cluster) await Promise.all([...cluster.masters, ...cluster.tservers].map((p) => cluster!.kill9(p)));
  for (const dir of mounted) run('umount', ['-l', dir]);
  await cluster?.destroy();
});

describe('disk full', () => {
  it.skipIf(!mountable.ok)(`disk full: replicas that cannot write stop with the reason in the log, and after the disks grow and the tservers restart every acknowledged row is there${mountable.ok ? '' : ` (skipped: cannot mount a tmpfs here: ${mountable.why})`}`, async () => {
    // Small memtables (the default is 128 MiB), so RocksDB flushes SST files into the small disks as before.
    cluster = await ProcCluster.create({ hostBase: 140, masters: 1, tservers: 3, tserverFlags: ['--heartbeat_interval_ms=200', '--memstore_size_mb=4'] });
    for (const t of cluster.tservers) {
      fs.mkdirSync(t.dataDir, { recursive: true });
      const m = run('mount', ['-t', 'tmpfs', '-o', `size=${DISK_MB}m`, 'tmpfs', t.dataDir]);
      expect(m.ok, m.why).toBe(true);
      mounted.push(t.dataDir);
    }
    await cluster.startAll();
    client = await TesseraClient.connect({ masterAddresses: cluster.masterAddresses, timeoutMs: 5_000 });
    await client.createTable({ name: 'fill', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 3 });
    const t = client.table('fill');

    const acked: number[] = [];
    let failed = 0;
    let inARow = 0;
    const until = Date.now() + FILL_MS_MAX;
    for (let i = 0; i < ROWS_MAX && Date.now() < until && inARow < FAILURES_IN_A_ROW; i++) {
      try {
        await t.upsert({ id: BigInt(i), v: value(i) });
        acked.push(i);
        inARow = 0;
      } catch {
        failed++;
        inARow++;
      }
    }
    // The disks really filled: writes failed, and the tservers said why. A storage failure stops the
    // tablet replica that hit it (FAILED; the process may stay up for its other replicas).
    expect(failed, `no write failed after ${acked.length} rows: the disks never filled`).toBeGreaterThan(0);
    expect(acked.length).toBeGreaterThan(10);
    const logs = cluster.tservers.map((p) => fs.readFileSync(p.logFile, 'utf8'));
    expect(logs.some((l) => l.includes('No space left on device'))).toBe(true);
    expect(logs.some((l) => l.includes('tablet replica failed and stopped')), cluster.tservers.map((p) => cluster!.logTail(p, 3)).join('\n')).toBe(true);

    // Room again: grow every filesystem, then restart every tserver (failed replicas open again only
    // at start; kill -9, so the restart is a crash recovery too).
    for (const dir of mounted) {
      const m = run('mount', ['-o', `remount,size=${GROWN_MB}m`, dir]);
      expect(m.ok, m.why).toBe(true);
    }
    for (const p of cluster.tservers) {
      await cluster.kill9(p);
      cluster.start(p);
    }
    await cluster.waitTServersAlive(3, 60_000);

    // Every acknowledged row reads back whole (retrying while tablets elect leaders again).
    const missing = await waitFor('every acknowledged row readable', 60_000, async () => {
      try {
        const got = await Promise.all(acked.map((i) => t.get({ id: BigInt(i) })));
        return got.map((r, k) => (r?.['v'] === value(acked[k]!) ? undefined : acked[k])).filter((x) => x !== undefined);
      } catch {
        return undefined;
      }
    });
    expect(missing).toEqual([]);
    // And the cluster takes writes again.
    await t.upsert({ id: -1n, v: 'after' });
    expect(await t.get({ id: -1n })).toEqual({ id: -1n, v: 'after' });
  }, 300_000);
});
