/**
 * Percolator transactions on real processes (1 master, 1 tserver, RF 1 to keep the machine's load
 * down; the protocol only needs single-row atomicity, which RF does not change): the bank workload
 * (concurrent 2-row transfers, snapshot reads always summing to the total), snapshot isolation and
 * write-write conflicts, and clients that die mid-commit — after the prewrites (their locks are
 * rolled back by a reader once their TTL is past) and after the primary's commit (rolled forward),
 * and client processes killed -9 at arbitrary points of their commits; then observers.
 */
import { execFile, spawn } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import { TesseraClient } from '../../client/tessera-client';
import { ObserverRunner, type PercolatorTransaction } from '../../client/percolator';
import { decodeRowState, statusAt } from '../../client/percolator/row-state';
import { ProcCluster, waitFor } from './cluster-harness';

const ACCOUNTS = 6;
const INITIAL = 100n;

let cluster: ProcCluster | undefined;
let client: TesseraClient | undefined;

beforeAll(async () => {
  cluster = await ProcCluster.create({ hostBase: 29, masters: 1, tservers: 1, tserverFlags: ['--heartbeat_interval_ms=200'] });
  await cluster.startAll();
  client = await TesseraClient.connect({ masterAddresses: cluster.masterAddresses, timeoutMs: 20_000 });
}, 120_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await cluster?.destroy();
});

const RETRYABLE = new Set<string>([ErrorCode.TXN_CONFLICT, ErrorCode.TXN_ABORTED]);

async function balances(c: TesseraClient): Promise<bigint[]> {
  const t = await c.percolator.begin();
  const rows = await Promise.all(Array.from({ length: ACCOUNTS }, (_, i) => t.table('acct').get({ id: BigInt(i) })));
  await t.commit();
  return rows.map((r) => r?.['bal'] as bigint);
}

async function transfer(t: PercolatorTransaction, from: number, to: number, amount: bigint): Promise<void> {
  const a = await t.table('acct').get({ id: BigInt(from) });
  const b = await t.table('acct').get({ id: BigInt(to) });
  await t.table('acct').upsert({ id: BigInt(from), bal: (a!['bal'] as bigint) - amount });
  await t.table('acct').upsert({ id: BigInt(to), bal: (b!['bal'] as bigint) + amount });
}

describe('percolator transactions', () => {
  it('percolator: bank transfers keep the total, snapshot isolation holds, dead clients are rolled back or forward', async () => {
    const c = client!;
    await c.percolator.createTable({ name: 'acct', columns: [{ name: 'id', type: 'int64' }, { name: 'bal', type: 'int64' }], primaryKey: { hash: ['id'] }, numTablets: 2, replicationFactor: 1 });
    await waitFor('the table to serve', 30_000, async () => (await c.table('acct').get({ id: 0n }).then(() => true).catch(() => false)));
    const init = await c.percolator.begin();
    for (let i = 0; i < ACCOUNTS; i++) await init.table('acct').upsert({ id: BigInt(i), bal: INITIAL });
    await init.commit();
    const total = INITIAL * BigInt(ACCOUNTS);

    // Bank: 6 workers x 8 transfers (retried on conflict, bounded), a reader checking sums meanwhile.
    let committed = 0;
    let conflicts = 0;
    let stop = false;
    const sums: bigint[] = [];
    const reader = (async () => {
      for (let i = 0; i < 200 && !stop; i++) sums.push((await balances(c)).reduce((x, y) => x + y, 0n));
    })();
    await Promise.all(
      Array.from({ length: 6 }, async (_, w) => {
        for (let i = 0; i < 8; i++) {
          const from = (w + i) % ACCOUNTS;
          const to = (w * 5 + i * 7 + 1) % ACCOUNTS === from ? (from + 1) % ACCOUNTS : (w * 5 + i * 7 + 1) % ACCOUNTS;
          for (let attempt = 0; attempt < 30; attempt++) {
            const t = await c.percolator.begin();
            try {
              await transfer(t, from, to, BigInt(1 + ((w + i) % 5)));
              await t.commit();
              committed++;
              break;
            } catch (e) {
              const code = DbError.from(e).code;
              if (!RETRYABLE.has(code)) throw e;
              conflicts++;
            }
          }
        }
      }),
    );
    stop = true;
    await reader;
    expect(committed).toBeGreaterThan(24);
    expect(sums.length).toBeGreaterThan(0);
    for (const s of sums) expect(s).toBe(total);
    expect((await balances(c)).reduce((x, y) => x + y, 0n)).toBe(total);
    process.stdout.write(`percolator bank: ${committed} transfers committed, ${conflicts} conflicts retried, ${sums.length} snapshot reads summed to ${total}\n`);

    // Snapshot isolation: an older snapshot does not see a later commit; the later writer of a row wins nothing.
    const old = await c.percolator.begin();
    const before = (await old.table('acct').get({ id: 0n }))!['bal'] as bigint;
    const w1 = await c.percolator.begin();
    await transfer(w1, 0, 1, 1n);
    await w1.commit();
    expect((await old.table('acct').get({ id: 0n }))!['bal']).toBe(before);
    await old.table('acct').upsert({ id: 0n, bal: 0n });
    await expect(old.commit()).rejects.toMatchObject({ code: ErrorCode.TXN_CONFLICT });

    // A client that dies after prewriting: its locks block readers until the TTL, then are rolled back.
    const b0 = await balances(c);
    const dead = await c.percolator.begin({ lockTtlMs: 300, TEST_dieAfter: 'prewrite' });
    await transfer(dead, 2, 3, 50n);
    await dead.commit();
    const rolledBack0 = c.percolator.stats.rolledBack;
    expect(await balances(c)).toEqual(b0);
    expect(c.percolator.stats.rolledBack).toBeGreaterThan(rolledBack0);
    // Both locks are gone and the primary carries a rollback record: the dead transaction can never commit.
    for (const id of [2n, 3n]) {
      const st = decodeRowState(await c.table('acct').get({ id }));
      expect(st.lock).toBeUndefined();
      expect(statusAt(st, dead.startTs)).toEqual({ type: 'rolled-back' });
    }

    // A client that dies after prewriting with a long TTL: once its liveness token (its row lock in
    // _pc_owners) is gone, readers roll it back without waiting the minute out.
    const c2 = await TesseraClient.connect({ masterAddresses: cluster!.masterAddresses, timeoutMs: 20_000 });
    const dead2 = await c2.percolator.begin({ lockTtlMs: 60_000, TEST_dieAfter: 'prewrite' });
    await transfer(dead2, 3, 4, 30n);
    await dead2.commit();
    expect(decodeRowState(await c.table('acct').get({ id: 3n })).lock?.owner).toBe(c2.percolator.ownerId);
    // The tserver console counts the locks it holds (both rows of the dead transfer) on /percolator.
    const page = (await (await fetch(`http://${cluster!.tservers[0]!.webAddress}/api/v1/percolator`)).json()) as { tablets: Array<{ table: string; rows: number; locks: number; oldestLockAgeMs: number | null }> };
    const acct = page.tablets.filter((t) => t.table === 'acct');
    expect(acct.reduce((n, t) => n + t.rows, 0)).toBe(ACCOUNTS);
    expect(acct.reduce((n, t) => n + t.locks, 0)).toBe(2);
    expect(acct.some((t) => t.oldestLockAgeMs !== null && t.oldestLockAgeMs >= 0)).toBe(true);
    await c2.close();
    const tokenRollback0 = c.percolator.stats.rolledBack;
    expect(await balances(c)).toEqual(b0);
    expect(c.percolator.stats.rolledBack).toBeGreaterThan(tokenRollback0);

    // A client that dies right after its primary's commit record: the secondary is rolled forward.
    const forward0 = c.percolator.stats.rolledForward;
    const half = await c.percolator.begin({ lockTtlMs: 60_000, TEST_dieAfter: 'primary' });
    await transfer(half, 4, 5, 7n);
    const { commitTs } = await half.commit();
    expect(commitTs).toBeDefined();
    const after = await balances(c);
    expect(after[4]).toBe(b0[4]! - 7n);
    expect(after[5]).toBe(b0[5]! + 7n);
    expect(c.percolator.stats.rolledForward).toBe(forward0 + 1);
    expect(after.reduce((x, y) => x + y, 0n)).toBe(total);

    // Real client processes killed -9 at arbitrary points of their commits, three times: whatever
    // they left behind is resolved by the next readers, and no money is lost or invented.
    for (let round = 0; round < 3; round++) {
      const child = spawn(process.execPath, [path.resolve(__dirname, 'fixtures/percolator-transfer-loop.js'), cluster!.masterAddresses.join(','), String(ACCOUNTS)], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (b: Buffer) => (out += b.toString()));
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      await waitFor('the killable client to commit a few transfers', 60_000, () => (out.match(/^ok /gm)?.length ?? 0) >= 3 + round * 2 || child.exitCode !== null);
      expect(child.exitCode).toBeNull();
      child.kill('SIGKILL');
      await exited;
    }
    const final = await balances(c);
    expect(final.reduce((x, y) => x + y, 0n)).toBe(total);
  }, 180_000);

  it('observers: each change triggers at most one committed run, changes before a run collapse, concurrent workers do not double-run', async () => {
    const c = client!;
    const cols = [{ name: 'id', type: 'int64' as const }, { name: 'body', type: 'string' as const }, { name: 'len', type: 'int64' as const }];
    await c.percolator.createTable({ name: 'docs', columns: cols, primaryKey: { hash: ['id'] }, numTablets: 2, replicationFactor: 1, observedColumns: ['body'] });
    await c.percolator.createTable({ name: 'obs_runs', columns: [{ name: 'id', type: 'int64' }, { name: 'n', type: 'int64' }], primaryKey: { hash: ['id'] }, numTablets: 1, replicationFactor: 1 });
    await waitFor('the tables to serve', 30_000, async () => (await c.table('docs').get({ id: 0n }).then(() => c.table('obs_runs').get({ id: 0n })).then(() => true).catch(() => false)));
    const write = async (id: bigint, body: string): Promise<void> => {
      const t = await c.percolator.begin();
      await t.table('docs').upsert({ id, body });
      await t.commit();
    };
    const read = async (): Promise<{ len: Array<bigint | undefined>; runs: Array<bigint | undefined> }> => {
      const t = await c.percolator.begin();
      const ids = [1n, 2n, 3n];
      const len = await Promise.all(ids.map(async (id) => (await t.table('docs').get({ id }))?.['len'] as bigint | undefined));
      const runs = await Promise.all(ids.map(async (id) => (await t.table('obs_runs').get({ id }))?.['n'] as bigint | undefined));
      return { len, runs };
    };
    // Three writes of doc 1 before any run collapse into one; docs 2 and 3 once each.
    await write(1n, 'a');
    await write(1n, 'ab');
    await write(1n, 'abc');
    await write(2n, 'hello');
    await write(3n, 'xy');
    // The tserver console shows the backlog: three docs with a notify hint.
    const backlog = async (): Promise<number> => ((await (await fetch(`http://${cluster!.tservers[0]!.webAddress}/api/v1/percolator`)).json()) as { tablets: Array<{ table: string; notifyBacklog: number }> }).tablets.filter((t) => t.table === 'docs').reduce((n, t) => n + t.notifyBacklog, 0);
    expect(await backlog()).toBe(3);
    // The observer app as the CLI loads it; two workers on the same backlog at once.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const app = require('./fixtures/observer-app.js') as { observers: ConstructorParameters<typeof ObserverRunner>[1] };
    const mk = (seed: number): ObserverRunner => new ObserverRunner({ percolator: c.percolator, table: (n) => c.table(n), random: () => seed }, app.observers);
    const [r1, r2] = await Promise.all([mk(0.1).runPass(), mk(0.7).runPass()]);
    expect(r1.failures + r2.failures).toBe(0);
    expect(r1.runs + r2.runs).toBeLessThanOrEqual(3);
    // Whatever lost a race is picked up by a later pass; then nothing is left to run.
    for (let i = 0; i < 5; i++) await mk(0.5).runPass();
    expect(await mk(0.5).runPass()).toEqual({ runs: 0, acknowledged: 0, conflicts: 0, failures: 0 });
    expect(await backlog()).toBe(0);
    expect(await read()).toEqual({ len: [3n, 5n, 2n], runs: [1n, 1n, 1n] });

    // A new change runs once more — through the CLI worker this time.
    await write(2n, 'hello world');
    const cli = path.resolve(__dirname, '../../dist/cli/main.js');
    const out = await promisify(execFile)(process.execPath, [cli, 'observers', 'run', '--app', path.resolve(__dirname, 'fixtures/observer-app.js'), '--passes', '2', '--master_addresses', cluster!.masterAddresses.join(',')]);
    expect(out.stdout).toContain('pass 1: 1 runs committed');
    expect(await read()).toEqual({ len: [3n, 11n, 2n], runs: [1n, 2n, 1n] });
  }, 120_000);
});
