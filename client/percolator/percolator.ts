/**
 * `client.percolator`: Percolator transactions and tables on this client (docs/percolator.md).
 *
 *   await client.percolator.createTable({ name: 'acct', columns: [{ name: 'id', type: 'int64' }, { name: 'bal', type: 'int64' }], primaryKey: { hash: ['id'] } });
 *   const txn = await client.percolator.begin();
 *   const a = await txn.table('acct').get({ id: 1n });
 *   await txn.table('acct').upsert({ id: 1n, bal: 5n });
 *   await txn.commit();                       // { commitTs }, or TXN_CONFLICT (begin again)
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { CallOptions, CreateTableOptions, Row } from '../client-types';
import type { Table } from '../table';
import type { TableSchema } from '../table-schema';
import type { ResolveStats } from './cells';
import { PercolatorTransaction, type PercolatorTxnOptions } from './percolator-txn';
import { OwnerLease } from './owner-lease';
import { NOTIFY_COLUMN, OBSERVED_PREFIX, SEQ_COLUMN, STATE_COLUMN } from './row-state';

/** What Percolator needs of a TesseraClient (an interface, so client/ and client/percolator/ form no cycle). */
export interface PercolatorHost {
  readonly timeoutMs: number;
  table(name: string): Table;
  createTable(t: CreateTableOptions, o?: CallOptions): Promise<string>;
  tableLocations(name: string): Promise<{ schema: TableSchema }>;
  getTimestamp(): Promise<bigint>;
}

/** Tables whose key columns are remembered (bounded: cleared when full). */
const SCHEMAS_MAX = 1000;

export class Percolator {
  private readonly schemas = new Map<string, { key: string[]; observed: string[] }>();
  /** Locks this client rolled forward and back while reading and writing (the lab shows them). */
  readonly stats: ResolveStats = { rolledForward: 0, rolledBack: 0 };

  private readonly lease: OwnerLease;

  constructor(private readonly host: PercolatorHost) {
    this.lease = new OwnerLease(host);
  }

  /** This client's liveness token id (carried by its locks once its lock on it is held). */
  get ownerId(): string {
    return this.lease.ownerId;
  }

  /** Lab only: stop renewing this client's liveness token without releasing it, as a crashed client (see OwnerLease.TEST_crash). */
  TEST_crash(): void {
    this.lease.TEST_crash();
  }

  /** Release this client's liveness token (its locks left behind are then resolved without waiting for their TTL). */
  close(): Promise<void> {
    return this.lease.close();
  }

  /**
   * A tessera table with the user's columns plus Percolator's hidden ones (_pc_seq, _pc_state,
   * _pc_notify); `observedColumns` declares the columns whose changes trigger observers (each as
   * a marker column `_pc_obs_<c>`).
   */
  createTable(t: CreateTableOptions & { observedColumns?: string[] }, o?: CallOptions): Promise<string> {
    if (!t || !Array.isArray(t.columns)) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'percolator.createTable needs { name, columns, primaryKey }');
    if (t.columns.some((c) => c.name.startsWith('_pc_'))) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'column names starting with _pc_ are Percolator\'s');
    const observed = t.observedColumns ?? [];
    for (const c of observed) if (!t.columns.some((x) => x.name === c)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `observed column ${c} is not a column of ${t.name}`);
    const { observedColumns: _obs, ...rest } = t;
    const hidden = [
      { name: SEQ_COLUMN, type: 'int64' as const },
      { name: STATE_COLUMN, type: 'string' as const },
      { name: NOTIFY_COLUMN, type: 'int64' as const },
      ...observed.map((c) => ({ name: `${OBSERVED_PREFIX}${c}`, type: 'bool' as const })),
    ];
    return this.host.createTable({ ...rest, columns: [...t.columns, ...hidden] }, o);
  }

  /** Key columns (in key order) and observed columns of a Percolator table. */
  async schemaOf(table: string): Promise<{ key: string[]; observed: string[] }> {
    let s = this.schemas.get(table);
    if (!s) {
      const { schema } = await this.host.tableLocations(table);
      if (!schema.byName.has(SEQ_COLUMN) || !schema.byName.has(STATE_COLUMN)) {
        throw new DbError(ErrorCode.INVALID_ARGUMENT, `table ${table} is not a Percolator table (create it with client.percolator.createTable)`);
      }
      s = {
        key: [...schema.hash, ...schema.range].map((c) => c.name),
        observed: schema.columns.filter((c) => c.name.startsWith(OBSERVED_PREFIX)).map((c) => c.name.slice(OBSERVED_PREFIX.length)),
      };
      if (this.schemas.size >= SCHEMAS_MAX) this.schemas.clear();
      this.schemas.set(table, s);
    }
    return s;
  }

  async begin(o: PercolatorTxnOptions = {}): Promise<PercolatorTransaction> {
    const [ownerId, startTs] = await Promise.all([this.lease.ensure(), this.host.getTimestamp()]);
    return new PercolatorTransaction(
      {
        table: (n) => this.host.table(n),
        keyOf: (n, r) => this.keyOf(n, r),
        nowMs: () => Date.now(),
        ownerId,
        ownerAlive: (o) => this.lease.alive(o),
        getTimestamp: () => this.host.getTimestamp(),
        observedOf: async (n) => (await this.schemaOf(n)).observed,
        stats: this.stats,
      },
      startTs,
      { ...o, timeoutMs: o.timeoutMs ?? this.host.timeoutMs },
    );
  }

  /** The key columns of `row` in key order (INVALID_ARGUMENT when one is missing). */
  private async keyOf(table: string, row: Row): Promise<Row> {
    if (!row || typeof row !== 'object') throw new DbError(ErrorCode.INVALID_ARGUMENT, `percolator: a key of ${table} must be an object`);
    const cols = (await this.schemaOf(table)).key;
    const key: Row = {};
    for (const c of cols) {
      const v = row[c];
      if (v === undefined || v === null) throw new DbError(ErrorCode.INVALID_ARGUMENT, `percolator: key column ${c} of ${table} is missing`);
      key[c] = v;
    }
    return key;
  }
}
