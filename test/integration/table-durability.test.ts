/**
 * Durability per table on real processes through the CLI (docs/durability.md): `create-table
 * --durability FLUSH`, every replica's log at FLUSH (/api/v1/tablets), `alter-table --durability
 * ASYNC` carried to every replica through the tablet's Raft log, `describe-table` showing it, a bad
 * level refused with INVALID_ARGUMENT, the status tablets staying FSYNC. Nodes on 127.0.0.165-167.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { getJson } from '../../lab/console-http';
import { ProcCluster, waitFor, type Proc, runCliOn } from './cluster-harness';

let cluster: ProcCluster | undefined;

afterAll(async () => {
  await cluster?.destroy();
});

function cli(args: string[]): Promise<{ code: number | null; out: string }> {
  return runCliOn(cluster!, args, 90_000);
}

async function levels(p: Proc, table: string): Promise<string[]> {
  const body = (await getJson(`http://${p.webAddress}/api/v1/tablets`, 3000)) as { tablets: Array<{ table: string; durability: string }> };
  return body.tablets.filter((t) => t.table === table).map((t) => t.durability);
}

async function everyReplicaAt(table: string, level: string, replicas: number): Promise<void> {
  let last: string[] = [];
  try {
    await waitFor(`every replica of ${table} at ${level}`, 30_000, async () => {
      last = (await Promise.all(cluster!.tservers.map((p) => levels(p, table)))).flat();
      return last.length === replicas && last.every((l) => l === level);
    });
  } catch (e) {
    throw new Error(`${(e as Error).message}; replicas report ${JSON.stringify(last)}`);
  }
}

describe('table durability (CLI, real processes)', () => {
  it('table durability: create-table --durability FLUSH, alter-table --durability ASYNC reaches every replica, describe-table shows it, a bad level is refused', async () => {
    cluster = await ProcCluster.create({ hostBase: 165, masters: 1, tservers: 3, tserverFlags: ['--heartbeat_interval_ms=200'] });
    await cluster.startAll();
    const created = await cli(['create-table', 'ev', '--columns', 'id:int64,v:string', '--hash', 'id', '--tablets', '2', '--durability', 'flush']);
    expect(created.code, created.out).toBe(0);
    await everyReplicaAt('ev', 'FLUSH', 6);
    expect((await cli(['upsert', 'ev', 'id=1', 'v=one'])).code).toBe(0);

    const altered = await cli(['alter-table', 'ev', '--durability', 'ASYNC']);
    expect(altered.code, altered.out).toBe(0);
    await everyReplicaAt('ev', 'ASYNC', 6);
    const d = await cli(['describe-table', 'ev', '--json']);
    expect(d.code, d.out).toBe(0);
    expect(JSON.parse(d.out) as { durability: string; schemaVersion: number }).toMatchObject({ durability: 'ASYNC', schemaVersion: 1 });
    expect((await cli(['get', 'ev', 'id=1', '--json'])).out).toContain('one');

    const bad = await cli(['alter-table', 'ev', '--durability', 'sometimes']);
    expect(bad.code).not.toBe(0);
    expect(bad.out).toContain('INVALID_ARGUMENT');
    // The status tablets (system table transactions) stay FSYNC.
    const status = (await Promise.all(cluster.tservers.map((p) => levels(p, 'transactions')))).flat();
    expect(status.length).toBeGreaterThan(0);
    expect(new Set(status)).toEqual(new Set(['FSYNC']));
  }, 180_000);
});
