/**
 * `tessera admin restore_table T --as_of TIME [--into NAME]` (docs/backup.md): point-in-time restore
 * inside the cluster, YugabyteDB's PITR in tessera's terms. Every tablet of T is read at exactly TIME
 * (the MVCC history DocDB keeps for timestamp_history_retention_interval_sec) and the rows are written
 * into a new hidden table, checked against the digest of what was read, then renamed to NAME. T itself
 * is not touched: to put the past back under T's name, drop T and rename NAME (docs/backup.md).
 *
 * A TIME below any tablet's history floor (versions that read needs may be collected) is refused with
 * SNAPSHOT_TOO_OLD before anything is created; a TIME in the future with INVALID_ARGUMENT.
 */
import { randomBytes } from 'node:crypto';
import { DbError, ErrorCode } from '../../common/errors';
import { htToJson } from '../../common/hybrid-time';
import type { TableDurability } from '../client-types';
import type { TesseraClient } from '../tessera-client';
import { encodeRow, RowDigest } from './backup-format';
import { tableDigest } from './export-import';
import { SCAN_PAGE_ROWS, TABLE_TIMEOUT_MS, type BackupProgress } from './export-tables';
import { RowLoader } from './row-loader';

export interface RestoreTableOptions {
  table: string;
  asOfHt: bigint;
  /** The new table (default `<table>_restored`). */
  into?: string;
  progress?: BackupProgress;
}

export interface RestoreTableResult {
  table: string;
  rows: number;
  asOfHt: string;
  digest: string;
}

/** SNAPSHOT_TOO_OLD, said in restore's words, if `ht` is below a tablet's history floor. */
async function checkRetained(client: TesseraClient, table: string, ht: bigint): Promise<void> {
  try {
    for await (const page of client.table(table).scanCellPages({ asOf: ht, pageRows: 1, pagesPerTabletMax: 1, timeoutMs: TABLE_TIMEOUT_MS })) void page;
  } catch (e) {
    if (e instanceof DbError && e.code === ErrorCode.SNAPSHOT_TOO_OLD) throw new DbError(ErrorCode.SNAPSHOT_TOO_OLD, `restore_table ${table}: ${htToJson(ht).iso} is older than the table's retained history (timestamp_history_retention_interval_sec; history floor ${String(e.details['historyFloorHt'] ?? '?')}): restore from an export instead`, e.details);
    throw e;
  }
}

export async function restoreTable(client: TesseraClient, o: RestoreTableOptions): Promise<RestoreTableResult> {
  const target = o.into ?? `${o.table}_restored`;
  const { schema } = await client.tableLocations(o.table);
  const summary = (await client.listTables()).find((t) => t.name === o.table);
  if ((await client.listTables()).some((t) => t.name === target)) throw new DbError(ErrorCode.ALREADY_EXISTS, `restore_table: table ${target} exists (name another with --into)`);
  const probe = await client.beginTransaction();
  const nowHt = probe.readHt;
  await probe.abort().catch(() => undefined);
  if (o.asOfHt > nowHt) throw new DbError(ErrorCode.INVALID_ARGUMENT, `restore_table: --as_of ${htToJson(o.asOfHt).iso} is in the future (the cluster's time is ${htToJson(nowHt).iso})`, { part: 'AS_OF' });
  await checkRetained(client, o.table, o.asOfHt);
  const hidden = `${target}__restoring_${randomBytes(4).toString('hex')}`;
  const durability = summary?.durability as TableDurability | undefined;
  await client.createTable({
    name: hidden,
    columns: schema.columns.map((c) => ({ name: c.name, type: c.type, ...(c.nullable ? {} : { nullable: false }), ...(c.family !== 'default' ? { family: c.family } : {}) })),
    primaryKey: { hash: schema.hash.map((c) => c.name), range: schema.range.map((c) => c.name) },
    numTablets: summary?.numTablets ?? 1,
    ...(schema.families.some((f) => f.name !== 'default') ? { families: schema.families } : {}),
    ...(durability === 'ASYNC' || durability === 'FLUSH' || durability === 'FSYNC' ? { durability } : {}),
  });
  try {
    const read = new RowDigest();
    const loader = new RowLoader(client, hidden, { batchRows: 1000, inFlight: 4, timeoutMs: TABLE_TIMEOUT_MS, onBatch: (n) => (n % 100_000 < 1000 ? o.progress?.(`restore_table ${o.table}: ${n} rows`) : undefined) });
    for await (const row of client.table(o.table).scanRows({ readHt: o.asOfHt, timeoutMs: TABLE_TIMEOUT_MS, pageSize: SCAN_PAGE_ROWS })) {
      read.add(encodeRow(row));
      await loader.add(row);
    }
    await loader.finish();
    const want = read.hex();
    const got = await tableDigest(client, hidden);
    if (got.rows !== read.rows || got.digest !== want) throw new DbError(ErrorCode.CORRUPTION, `restore_table ${o.table}: the new table holds ${got.rows} rows with digest ${got.digest.slice(0, 12)}…, the read at ${o.asOfHt} ${read.rows} with ${want.slice(0, 12)}…`);
    await client.alterTable(hidden, { renameTo: target });
    o.progress?.(`restore_table ${o.table}: ${read.rows} rows as of ${htToJson(o.asOfHt).iso} in ${target}, digest checked`);
    return { table: target, rows: read.rows, asOfHt: o.asOfHt.toString(), digest: want };
  } catch (e) {
    await client.dropTable(hidden, { ifExists: true }).catch(() => undefined);
    throw e;
  }
}
