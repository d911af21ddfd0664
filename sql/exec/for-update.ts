/**
 * SELECT … FOR UPDATE / FOR NO KEY UPDATE / FOR SHARE / FOR KEY SHARE [OF t] [NOWAIT] in a
 * transaction block (docs/sql.md, "Transactions"): each row the statement's access path read from a
 * locked table is written back unchanged in the block's transaction, so it holds a write intent on
 * the row until COMMIT — a concurrent writer of the row (or another locker) conflicts with it, as
 * with PostgreSQL's row lock, by tessera's conflict rules (40001 for the loser, no waiting). FOR
 * SHARE locks as FOR UPDATE does (two sharers conflict, where PostgreSQL lets them both in).
 * Outside a block the statement's own transaction would end with the statement: nothing is held,
 * as in PostgreSQL after an autocommit SELECT … FOR UPDATE.
 */
import type { Table } from '../../client';
import type { Node } from '../sql-parser';
import type { SqlCatalog } from './catalog';
import type { LoadedRelation } from './select';
import { notSupported } from './sql-error';
import { toStorage } from './sql-types';

type SelectStmt = Extract<Node, { SelectStmt: unknown }>['SelectStmt'];
type RangeVar = Extract<Node, { RangeVar: unknown }>['RangeVar'];

/** The locking clause's targets: undefined for every table of the statement; SKIP LOCKED is 0A000. */
export function lockTargets(sel: SelectStmt): Set<string> | undefined | false {
  const clauses = (sel.lockingClause ?? []).flatMap((c) => ('LockingClause' in c ? [c.LockingClause] : []));
  if (clauses.length === 0) return false;
  if (clauses.some((c) => c.waitPolicy === 'LockWaitSkip')) throw notSupported('SKIP LOCKED');
  const named = clauses.flatMap((c) => (c.lockedRels ?? []).flatMap((r) => ('RangeVar' in r && r.RangeVar.relname ? [r.RangeVar.relname] : [])));
  // A clause without OF locks every table; with OF, only those named (by alias or name).
  return clauses.some((c) => (c.lockedRels ?? []).length === 0) ? undefined : new Set(named);
}

/** The table references of a SELECT's own FROM list (its joins included; not those of subqueries), which FOR UPDATE locks. */
function fromListTables(from: Node[] | undefined, out = new Set<object>()): Set<object> {
  for (const f of from ?? []) {
    if ('RangeVar' in f) out.add(f.RangeVar);
    else if ('JoinExpr' in f) fromListTables([f.JoinExpr.larg!, f.JoinExpr.rarg!].filter(Boolean), out);
  }
  return out;
}

/** Writes back, in the transaction behind `table`, every row read from a locked table of the SELECT's FROM list; the count of rows locked. */
export async function lockReadRows(sel: SelectStmt, targets: Set<string> | undefined, relations: Map<object, LoadedRelation>, catalog: SqlCatalog, table: (name: string) => Table): Promise<number> {
  const own = fromListTables(sel.fromClause);
  let locked = 0;
  for (const [node, rel] of relations) {
    const rv = node as RangeVar;
    if (!own.has(node) || rel.tableOid === undefined || !rv.relname) continue; // subqueries' tables and catalog views: nothing to lock
    if (targets && !targets.has(rv.alias?.aliasname ?? rv.relname) && !targets.has(rv.relname)) continue;
    const def = await catalog.require(rv.relname);
    const keyCols = [...def.hash, ...def.range];
    const t = table(def.name);
    for (const row of rel.rows) {
      const key: Record<string, unknown> = {};
      for (const k of keyCols) {
        const i = def.columns.findIndex((c) => c.name === k);
        key[k] = toStorage(row[i] ?? null, def.columns[i]!.type);
      }
      // The whole row as the transaction sees it (the scan may have read only some columns).
      const full = await t.get(key as Parameters<Table['get']>[0]);
      if (!full) continue;
      // Sent now, not kept back to COMMIT (ysql_block_keeps_writes): the intent is the lock.
      await t.upsert(full, { keepBack: false });
      locked++;
    }
  }
  return locked;
}
