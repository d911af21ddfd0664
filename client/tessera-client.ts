/**
 * The client library (the package's main export):
 *
 *   const client = await TesseraClient.connect({ masterAddresses: ['127.0.0.1:7100'] });
 *   await client.createTable({ name: 'demo', columns: [{ name: 'id', type: 'int64' }, { name: 'value', type: 'string' }],
 *                              primaryKey: { hash: ['id'] }, numTablets: 3 });
 *   const demo = client.table('demo');
 *   await demo.upsert({ id: 1n, value: 'hello' });
 *   await demo.get({ id: 1n });            // { id: 1n, value: 'hello' }
 *   await client.close();
 *
 * Distributed transactions reuse this client's MetaCache and TabletInvoker (client/transaction.ts):
 *
 *   const txn = await client.beginTransaction({ isolation: 'snapshot' });
 *   await txn.table('demo').upsert({ id: 2n, value: 'x' });
 *   await txn.commit();                    // { commitHt }
 */
import { TxnWriteCoalescer } from './txn-write-coalescer';
import { DbError, ErrorCode } from '../common/errors';
import { encodeSplitPoints } from './split-points';

/** A manual split waits for its children to serve (docs/splitting.md): give it at least this long. */
const SPLIT_TIMEOUT_MS = 60_000;
import { Flags } from '../common/flags';
import { clientTlsOf, familyToPb, masterMethods, parseSecrets, splitMethods, readSecretFile, WsTransport, type ListMastersResponsePB, type ListTabletServersResponsePB, type RpcClient, type Transport } from '../rpc';
import { addressTranslator, translatingRpcClient } from './address-translation';
import type { AlterTableOptions, AlterTableProgress, ConnectOptions, CreateTableOptions, TableSummary, CallOptions } from './client-types';
import { MasterProxy } from './master-proxy';
import { MetaCache } from './meta-cache';
import { ReplicaHealth } from './replica-health';
import { Deadline } from './retry-policy';
import { StatusTabletProxy } from './status-tablet-proxy';
import { Table } from './table';
import { TabletInvoker } from './tablet-invoker';
import { Transaction, type TransactionOptions } from './transaction';
import { TimestampClient } from './timestamp-client';
import { Percolator } from './percolator/percolator';

export const DEFAULT_TIMEOUT_MS = 10_000;
/** YugabyteDB's retryable_rpc_single_call_timeout_ms default. */
export const DEFAULT_RPC_SINGLE_CALL_TIMEOUT_MS = 2_500;
/** YugabyteDB's transaction_heartbeat_usec default. */
export const DEFAULT_TRANSACTION_HEARTBEAT_USEC = 500_000;
/** Table handles kept (they are cheap; the bound stops a leak through ever-new names). */
const TABLE_HANDLES_MAX = 10_000;

/** How long a server that did not answer an attempt stays suspect at least (ReplicaHealth; else twice rpcSingleCallTimeoutMs). */
const SUSPECT_MS_MIN = 2_000;

export class TesseraClient {
  private readonly master: MasterProxy;
  private readonly cache: MetaCache;
  private readonly invoker: TabletInvoker;
  private readonly statusTablets: StatusTabletProxy;
  private readonly heartbeatMs: number;
  private readonly batchWrites: boolean;
  private readonly rowRequestsInflightMax: number | undefined;
  private readonly deferTxnWrites: boolean;
  /** Commits of this client's transactions by path (tests, `tessera verify --txn_defer_writes`). */
  readonly txnCommits = { singleTablet: 0, distributed: 0 };
  /** Transactional writes of concurrent transactions, coalesced per tablet (with batchWrites). */
  readonly txnWrites: TxnWriteCoalescer | undefined;
  private readonly tables = new Map<string, Table>();
  /** The timestamp oracle (master leader), one batched RPC in flight (client/timestamp-client.ts). */
  readonly oracle: TimestampClient;
  /** Percolator transactions on this client (docs/percolator.md). */
  readonly percolator: Percolator;
  private closed = false;
  readonly timeoutMs: number;

  private constructor(
    private readonly rpc: RpcClient,
    opts: ConnectOptions,
  ) {
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.batchWrites = opts.batchWrites ?? true;
    this.rowRequestsInflightMax = opts.rowRequestsInflightMax;
    if (this.rowRequestsInflightMax !== undefined && !(Number.isSafeInteger(this.rowRequestsInflightMax) && this.rowRequestsInflightMax >= 0)) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'rowRequestsInflightMax must be an integer >= 0');
    this.deferTxnWrites = opts.deferTxnWrites === true;
    this.master = new MasterProxy(rpc, opts.masterAddresses, opts.rpcSingleCallTimeoutMs ?? DEFAULT_RPC_SINGLE_CALL_TIMEOUT_MS);
    const singleCallMs = opts.rpcSingleCallTimeoutMs ?? DEFAULT_RPC_SINGLE_CALL_TIMEOUT_MS;
    if (!(singleCallMs >= 0)) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'rpcSingleCallTimeoutMs must be >= 0');
    // One memory of servers that did not answer, for data and status tablets alike.
    const health = new ReplicaHealth(Math.max(SUSPECT_MS_MIN, 2 * singleCallMs));
    this.cache = new MetaCache(this.master, health);
    this.invoker = new TabletInvoker(rpc, this.cache, singleCallMs, health);
    this.txnWrites = this.batchWrites ? new TxnWriteCoalescer(this.invoker) : undefined;
    this.statusTablets = new StatusTabletProxy(rpc, this.master, Math.random, singleCallMs, health);
    const hbUsec = opts.transactionHeartbeatUsec ?? DEFAULT_TRANSACTION_HEARTBEAT_USEC;
    if (!(hbUsec > 0)) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'transactionHeartbeatUsec must be > 0');
    this.heartbeatMs = hbUsec / 1000;
    this.oracle = new TimestampClient(this.master, this.timeoutMs);
    this.percolator = new Percolator({
      timeoutMs: this.timeoutMs,
      table: (n) => this.table(n),
      createTable: (t, o) => this.createTable(t, o),
      tableLocations: (n) => this.cache.get(n, this.deadline()),
      getTimestamp: () => this.oracle.getTimestamp(),
    });
  }

  /** Connect and check that a master answers (TIMED_OUT when none does within timeoutMs). */
  /**
   * `wrapRpc`: what the client calls through instead of the transport's client (a tserver's SQL layer
   * calls its own tablets in-process: rpc/local-calls.ts).
   */
  static async connect(opts: ConnectOptions & { transport?: Transport; wrapRpc?: (rpc: RpcClient) => RpcClient }): Promise<TesseraClient> {
    const addrs = (opts.masterAddresses ?? []).flatMap((a) => a.split(',')).map((a) => a.trim()).filter(Boolean);
    if (addrs.length === 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'connect needs masterAddresses, e.g. ["127.0.0.1:7100"]');
    const clusterSecrets = opts.clusterSecret !== undefined ? parseSecrets(opts.clusterSecret, 'the clusterSecret option') : opts.clusterSecretFile ? readSecretFile(opts.clusterSecretFile) : [];
    const transport = opts.transport ?? new WsTransport({ flags: new Flags(), clusterSecrets, ...(opts.certsDir ? { clientTls: clientTlsOf(opts.certsDir) } : {}) });
    // Translation happens where the client dials; everything above it keeps advertised addresses.
    const translate = addressTranslator(opts);
    // Servers' /rpcz names this client's connections by it (several load generators told apart).
    const caller = `client pid ${process.pid}`;
    const dialled = translate ? translatingRpcClient(transport.createClient({ caller }), translate) : transport.createClient({ caller });
    const rpc = opts.wrapRpc ? opts.wrapRpc(dialled) : dialled;
    const c = new TesseraClient(rpc, { ...opts, masterAddresses: addrs });
    try {
      await c.master.call(masterMethods().listTables, {}, new Deadline(c.timeoutMs), true, true);
    } catch (e) {
      await c.close();
      throw e;
    }
    return c;
  }

  private deadline(o?: CallOptions): Deadline {
    if (this.closed) throw new DbError(ErrorCode.SHUTTING_DOWN, 'client is closed');
    return new Deadline(o?.timeoutMs ?? this.timeoutMs);
  }

  async createTable(t: CreateTableOptions, o?: CallOptions): Promise<string> {
    if (!t || typeof t.name !== 'string') throw new DbError(ErrorCode.INVALID_ARGUMENT, 'createTable needs { name, columns, primaryKey }');
    const r = await this.master.call(
      masterMethods().createTable,
      {
        name: t.name,
        schema: {
          columns: (t.columns ?? []).map((c) => ({ name: c.name, type: c.type, nullable: c.nullable !== false, family: c.family ?? '' })),
          hashColumns: t.primaryKey?.hash ?? [],
          rangeColumns: t.primaryKey?.range ?? [],
          families: (t.families ?? []).map(familyToPb),
        },
        numTablets: t.numTablets ?? 0,
        replicationFactor: t.replicationFactor ?? 0,
        ifNotExists: t.ifNotExists ?? false,
        durability: t.durability ?? '',
        splitKeys: t.splitKeys && t.splitKeys.length > 0 ? [...t.splitKeys] : encodeSplitPoints(t.columns ?? [], t.primaryKey?.range ?? [], t.splitAt ?? []),
        splitPolicy: t.splitPolicy ?? '',
      },
      this.deadline(o),
      // Safe to resend: a name can be created once, a resend answers ALREADY_EXISTS at worst.
      true,
    );
    this.cache.invalidate(t.name);
    return r.tableId ?? '';
  }

  async dropTable(name: string, o?: CallOptions & { ifExists?: boolean }): Promise<void> {
    await this.master.call(masterMethods().dropTable, { name, ifExists: o?.ifExists ?? false }, this.deadline(o));
    this.cache.invalidate(name);
    this.tables.delete(name);
  }

  async listTables(o?: CallOptions): Promise<TableSummary[]> {
    const r = await this.master.call(masterMethods().listTables, {}, this.deadline(o), true, true);
    return (r.tables ?? []).map((t) => ({ id: t.id ?? '', name: t.name ?? '', numTablets: t.numTablets ?? 0, replicationFactor: t.replicationFactor ?? 0, schemaVersion: t.schemaVersion ?? 0, durability: t.durability || 'FSYNC' }));
  }

  /**
   * ALTER TABLE: add (nullable), drop and rename columns, rename the table — one new schema version.
   * Resolves once every tablet's leader serves it (`onProgress` hears each poll), so this client's
   * next operations use it; other clients take it up when a tablet refuses their older version
   * (SCHEMA_VERSION_MISMATCH, retried by the client with the new schema) or a row names a column
   * they do not know yet. TIMED_OUT when the tablets do not all have it by the deadline (the change
   * itself is durable in the catalog and still reaches them).
   */
  async alterTable(name: string, change: AlterTableOptions, o?: CallOptions & { onProgress?: (p: AlterTableProgress) => void }): Promise<{ schemaVersion: number }> {
    if (typeof name !== 'string' || !change || typeof change !== 'object') throw new DbError(ErrorCode.INVALID_ARGUMENT, 'alterTable needs (name, { addColumns?, dropColumns?, renameColumns?, renameTo? })');
    const d = this.deadline(o);
    const r = await this.master.call(
      masterMethods().alterTable,
      {
        name,
        addColumns: (change.addColumns ?? []).map((c) => ({ name: c.name, type: c.type, nullable: true, family: c.family ?? '' })),
        setFamilies: (change.setFamilies ?? []).map(familyToPb),
        dropColumns: change.dropColumns ?? [],
        renameColumns: (change.renameColumns ?? []).map((x) => ({ from: x.from, to: x.to })),
        newName: change.renameTo ?? '',
        durability: change.durability ?? '',
      },
      d,
      // Not resent after an unknown outcome: the change may have been made (a resend could fail on it).
      false,
    );
    const finalName = change.renameTo || name;
    const version = r.schemaVersion ?? 0;
    for (const n of [name, finalName]) {
      this.cache.invalidate(n);
      this.tables.delete(n);
    }
    for (let i = 0; ; i++) {
      const s = await this.master.call(masterMethods().isAlterTableDone, { id: r.tableId ?? '' }, d, true, true);
      o?.onProgress?.({ schemaVersion: s.schemaVersion ?? version, tabletsDone: s.tabletsDone ?? 0, tablets: s.tablets ?? 0 });
      if (s.done || (s.schemaVersion ?? 0) > version) break;
      if (d.expired()) throw new DbError(ErrorCode.TIMED_OUT, `ALTER TABLE ${name}: schema version ${version} is in the catalog but ${s.tabletsDone ?? 0} of ${s.tablets ?? 0} tablets serve it so far (it still reaches the others)`, { schemaVersion: version, tabletsDone: s.tabletsDone ?? 0, tablets: s.tablets ?? 0 });
      await new Promise((res) => setTimeout(res, Math.min(200, 20 * (i + 1))));
    }
    return { schemaVersion: version };
  }

  /** Tablet servers as the leader master sees them (admin tools). */
  async listTabletServers(o?: CallOptions): Promise<ListTabletServersResponsePB> {
    return this.master.call(masterMethods().listTabletServers, {}, this.deadline(o), true, true);
  }

  /**
   * Split a tablet now (docs/splitting.md): at `splitKey` (range tables: encoded leading range
   * components, see client/split-points.ts), at `splitHash` (hash tables), or at the middle of its data.
   * Answers the two children once they serve (or once the split is registered, if they take long).
   */
  async splitTablet(tabletId: string, o: CallOptions & { splitKey?: Uint8Array; splitHash?: number } = {}): Promise<{ children: string[] }> {
    const r = await this.master.call(
      splitMethods().masterSplitTablet,
      { tabletId, splitKey: o.splitKey ?? new Uint8Array(0), splitHash: o.splitHash ?? 0, hasSplitHash: o.splitHash !== undefined },
      new Deadline(o.timeoutMs ?? Math.max(this.timeoutMs, SPLIT_TIMEOUT_MS)),
      // Not resent blindly: a second split of a tablet already split is refused (TABLET_NOT_FOUND).
      false,
    );
    return { children: r.children ?? [] };
  }

  async listMasters(o?: CallOptions): Promise<ListMastersResponsePB> {
    return this.master.call(masterMethods().listMasters, {}, this.deadline(o), true, true);
  }

  /** Table locations (tablets, partitions, replicas) fresh from the master. */
  async tableLocations(name: string, o?: CallOptions): ReturnType<MetaCache['refresh']> {
    this.cache.invalidate(name);
    return this.cache.get(name, this.deadline(o));
  }

  table(name: string): Table {
    let t = this.tables.get(name);
    if (!t) {
      if (this.tables.size >= TABLE_HANDLES_MAX) this.tables.clear();
      t = new Table(name, this.cache, this.invoker, this.timeoutMs, undefined, this.batchWrites, undefined, this.rowRequestsInflightMax);
      this.tables.set(name, t);
    }
    return t;
  }

  /**
   * Begin a distributed transaction (snapshot isolation unless told otherwise). Its `table(name)`
   * has the same row methods as `client.table(name)`; end it with `commit()` or `abort()`.
   */
  async beginTransaction(o: TransactionOptions = {}): Promise<Transaction> {
    this.deadline(o);
    if (o.deferWrites === undefined && this.deferTxnWrites) o = { ...o, deferWrites: true };
    return Transaction.begin({ cache: this.cache, invoker: this.invoker, statusTablets: this.statusTablets, timeoutMs: o.timeoutMs ?? this.timeoutMs, heartbeatMs: this.heartbeatMs, commits: this.txnCommits, ...(this.txnWrites ? { txnWrites: this.txnWrites } : {}) }, o);
  }

  /** The raw RPC client (admin commands reuse the connection pool; it dials through addressMap / translateAddress). */
  rpcClient(): RpcClient {
    return this.rpc;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.percolator.close();
    this.closed = true;
    await this.rpc.close();
  }
}
