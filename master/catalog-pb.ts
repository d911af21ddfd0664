/** The catalog's tables as the wire carries them (ListTables, GetTableLocations, CreateTablet, AlterSchema). */
import { familyToPb, type AlterSchemaRequestPB, type TableInfoPB, type TableSchemaPB } from '../rpc';
import { durabilityOf, schemaVersionOf, type TableInfo } from './catalog-types';

export function schemaToPb(t: TableInfo): TableSchemaPB {
  return {
    columns: t.schema.columns.map((c) => ({ name: c.name, id: c.id, type: c.type, nullable: c.nullable, family: c.family ?? '' })),
    hashColumns: [...t.schema.hashColumns],
    rangeColumns: [...t.schema.rangeColumns],
    families: (t.schema.families ?? []).map(familyToPb),
  };
}

/** AlterSchema for one tablet of `t`: the catalog's schema, version and name (ALTER TABLE). */
export function alterSchemaRequest(tabletId: string, t: TableInfo): AlterSchemaRequestPB {
  return { tabletId, schema: schemaToPb(t), schemaVersion: schemaVersionOf(t), tableName: t.name, durability: durabilityOf(t) };
}

export function tableToPb(t: TableInfo): TableInfoPB {
  return { id: t.id, name: t.name, schema: schemaToPb(t), numTablets: t.numTablets, replicationFactor: t.replicationFactor, state: t.state, schemaVersion: schemaVersionOf(t), durability: durabilityOf(t) };
}
