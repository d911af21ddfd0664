/**
 * The schema facts DocDB needs of a tablet (docs/cells.md): the column ids of the current schema
 * (dropped columns) and each column's family rules (retention). Both come from the schema in the
 * tablet's metadata — the one CreateTablet, a CHANGE_SCHEMA entry or a remote bootstrap brought —
 * so every replica, and every later leader, applies the same retention.
 */
import { familyNamed } from '../../common/column-families';
import type { CellRules, DocDbApi } from '../../docdb';
import { schemaColumnIds, type TabletMeta } from './tablet-meta';

/** Column id → its family's rules; undefined when the table declares no families (all defaults). */
export function cellRulesOf(meta: TabletMeta): Map<number, CellRules> | undefined {
  const families = meta.schema.families;
  if (!families || families.length === 0) return undefined;
  const out = new Map<number, CellRules>();
  for (const c of meta.schema.columns) {
    const f = familyNamed(families, c.family);
    out.set(c.id, { versions: f.versions, minVersions: f.minVersions, ttlSec: f.ttlSec, keepDeletedCells: f.keepDeletedCells });
  }
  return out;
}

export function applySchemaToDocDb(db: DocDbApi, meta: TabletMeta): void {
  db.setSchemaColumns(schemaColumnIds(meta));
  db.setCellFamilies(cellRulesOf(meta));
}
