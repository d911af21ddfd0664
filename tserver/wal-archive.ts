/**
 * WAL archive on the tserver (docs/backup.md): with --log_archive_dir, the Raft log of every tablet of
 * the chosen tables (--log_archive_tables; empty: every user table) copies each closed segment to
 * `<dir>/<table>/<tablet id>/<server uuid>/` before log GC deletes it (raft/wal/wal-archive.ts), and
 * the tablet's schema (column ids → names, key columns) is kept beside it in `schema.json`, so
 * `tessera admin replay-wal` can turn the archived writes back into rows without the source table.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { defineFlag, FlagTag, type Flags } from '../common/flags';
import type { TabletMeta } from './tablet/tablet-meta';

export const LOG_ARCHIVE_DIR = defineFlag({
  name: 'log_archive_dir',
  type: 'string',
  default: '',
  help: 'Directory the Raft logs of the tables in log_archive_tables copy their closed segments into before log GC deletes them (<dir>/<table>/<tablet>/<server uuid>/), for tessera admin replay-wal. Empty: no archive. A failed copy is logged and leaves a gap replay-wal reports.',
});

export const LOG_ARCHIVE_TABLES = defineFlag({
  name: 'log_archive_tables',
  type: 'string',
  default: '',
  help: 'Comma-separated tables whose Raft log segments log_archive_dir keeps. Empty: every user table.',
  tags: [FlagTag.runtime],
});

export const ARCHIVE_SCHEMA_FILE = 'schema.json';

/** The archive directory of this replica of `meta`'s tablet, or undefined when its table is not archived. */
export function walArchiveDirOf(flags: Flags, meta: TabletMeta, selfUuid: string): string | undefined {
  const root = flags.get(LOG_ARCHIVE_DIR);
  if (!root || meta.tableName === 'transactions' || meta.tableName.startsWith('__')) return undefined;
  const tables = flags.get(LOG_ARCHIVE_TABLES).split(',').map((s) => s.trim()).filter(Boolean);
  if (tables.length > 0 && !tables.includes(meta.tableName)) return undefined;
  const tabletDir = path.join(root, meta.tableName, meta.tabletId);
  fs.mkdirSync(tabletDir, { recursive: true });
  // The schema the tablet opened with; replay-wal follows CHANGE_SCHEMA entries of the log from there.
  const schemaFile = path.join(tabletDir, ARCHIVE_SCHEMA_FILE);
  const tmp = `${schemaFile}.${selfUuid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify({ tableId: meta.tableId, tableName: meta.tableName, tabletId: meta.tabletId, schemaVersion: meta.schemaVersion, schema: meta.schema }, null, 2)}\n`);
  fs.renameSync(tmp, schemaFile);
  return path.join(tabletDir, selfUuid);
}
