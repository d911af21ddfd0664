/**
 * Shared steps of the transactional integration tests: a 1 master + 3 tserver cluster on loopback
 * whose `transactions` status tablets are up, the tservers' /api/v1/tablets JSON, and a transaction
 * runner that classifies each outcome the way a Jepsen history does (ok / fail / info).
 */
import { DbError, ErrorCode } from '../../common/errors';
import { getJson } from '../../lab/console-http';
import { TesseraClient } from '../../client/tessera-client';
import type { Transaction } from '../../client/transaction';
import { ProcCluster, waitFor, type Proc } from './cluster-harness';

export interface TabletJson {
  tabletId: string;
  table: string;
  role: string;
  state: string;
  regulardb: { memtableBytes: number; sstBytes: number };
  intentsdb: { memtableBytes: number; sstBytes: number; intentCount: number };
}

export async function tabletsOf(p: Proc, table: string): Promise<TabletJson[]> {
  const body = (await getJson(`http://${p.webAddress}/api/v1/tablets`, 2000)) as { tablets: TabletJson[] };
  return body.tablets.filter((t) => t.table === table);
}

/** Cluster up, client connected, and a transaction can begin (the status tablets elected leaders). */
export async function startTxnCluster(hostBase: number): Promise<{ cluster: ProcCluster; client: TesseraClient }> {
  const cluster = await ProcCluster.create({ hostBase, masters: 1, tservers: 3, tserverFlags: ['--heartbeat_interval_ms=200'] });
  try {
    await cluster.startAll();
    const client = await TesseraClient.connect({ masterAddresses: cluster.masterAddresses, timeoutMs: 20_000 });
    await waitFor('a transaction to begin (status tablets up)', 60_000, async () => {
      const t = await client.beginTransaction({ timeoutMs: 3000 });
      await t.abort();
      return true;
    }, 300);
    return { cluster, client };
  } catch (e) {
    await cluster.destroy();
    throw e;
  }
}

/** Every tablet of `table` has its 3 replicas reporting and one leader (so the first writes do not wait). */
export async function waitTableReady(cluster: ProcCluster, table: string, tablets: number): Promise<void> {
  await waitFor(`${table}: ${tablets} tablets x 3 replicas with leaders`, 30_000, async () => {
    const all = (await Promise.all(cluster.tservers.map((p) => tabletsOf(p, table)))).flat();
    const leaders = all.filter((t) => t.role === 'LEADER').length;
    return all.length === tablets * 3 && leaders === tablets;
  }, 200);
}

export type Outcome<T> = { type: 'ok'; value: T; commitHt: bigint } | { type: 'fail'; code: string } | { type: 'info'; code: string };

/** Codes after which the transaction certainly did not commit. */
const DEFINITE_FAIL: ReadonlySet<string> = new Set([ErrorCode.TXN_CONFLICT, ErrorCode.TXN_ABORTED, ErrorCode.TXN_EXPIRED, ErrorCode.TXN_NOT_FOUND, ErrorCode.READ_RESTART]);

/**
 * Run `body` in a new transaction and commit. Failures before the commit request are definite
 * (`fail`): the client never committed. A commit failure is `fail` only for a TXN_* code; any other
 * commit failure (TIMED_OUT, NETWORK_ERROR...) is `info`: it may have committed.
 */
export async function runTxn<T>(client: TesseraClient, body: (t: Transaction) => Promise<T>, timeoutMs = 8000): Promise<Outcome<T>> {
  let txn: Transaction;
  try {
    txn = await client.beginTransaction({ timeoutMs });
  } catch (e) {
    return { type: 'fail', code: DbError.from(e).code };
  }
  let value: T;
  try {
    value = await body(txn);
  } catch (e) {
    await txn.abort({ timeoutMs: 2000 }).catch(() => undefined);
    return { type: 'fail', code: DbError.from(e).code };
  }
  try {
    const r = await txn.commit({ timeoutMs });
    return { type: 'ok', value, commitHt: r.commitHt };
  } catch (e) {
    const code = DbError.from(e).code;
    return DEFINITE_FAIL.has(code) ? { type: 'fail', code } : { type: 'info', code };
  }
}
