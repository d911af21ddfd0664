/**
 * A replica's meta (identity, schema, peers, split children; meta.json): changed by CHANGE_SCHEMA
 * entries and by SPLIT, always durable in meta.json before the change counts as applied.
 */
import type { Logger } from '../../common/log';
import type { DocDbApi, OpId } from '../../docdb';
import type { WalDurability } from '../../raft';
import { applySchemaToDocDb } from './cell-schema';
import { writeTabletMeta, type TabletMeta } from './tablet-meta';
import type { TabletOp } from './tablet-op';

export interface TabletSchemaDeps {
  dir: string;
  log: Logger;
  db(): DocDbApi;
  /** ALTER TABLE ... durability: the replica's Raft log follows from here on (docs/durability.md). */
  setLogDurability(d: WalDurability): void;
}

export class TabletSchema {
  constructor(
    private value: TabletMeta,
    private readonly deps: TabletSchemaDeps,
  ) {}

  get meta(): TabletMeta {
    return this.value;
  }

  /** Tell DocDB the schema's columns (meta.json is never behind the databases). */
  applyToDocDb(): void {
    applySchemaToDocDb(this.deps.db(), this.value);
  }

  /**
   * CHANGE_SCHEMA (ALTER TABLE): the replica's schema from this entry on, durable in meta.json before
   * the entry counts as applied (the databases' frontiers may pass it; it is never replayed then). An
   * entry of an older or equal version is a no-op (replay, a repeated AlterSchema).
   */
  change(op: Extract<TabletOp, { type: 'CHANGE_SCHEMA' }>, opId: OpId): void {
    if (op.schemaVersion <= this.value.schemaVersion) return;
    const durability = op.durability ?? this.value.durability;
    this.write({ ...this.value, schema: op.schema, tableName: op.tableName, schemaVersion: op.schemaVersion, ...(durability ? { durability } : {}) });
    if (durability) this.deps.setLogDurability(durability);
    // Before any later entry writes an added column; a dropped column's values are read no more.
    this.applyToDocDb();
    this.deps.log.info({ tablet: this.value.tabletId, table: op.tableName, schemaVersion: op.schemaVersion, index: opId.index }, 'schema changed');
  }

  /** This replica applied SPLIT: durable in meta.json, then every request is answered TABLET_SPLIT. */
  markSplit(children: NonNullable<TabletMeta['splitInto']>): void {
    this.write({ ...this.value, splitInto: children });
  }

  private write(next: TabletMeta): void {
    writeTabletMeta(this.deps.dir, next);
    this.value = next;
  }
}
