/**
 * A backup chain (docs/backup.md): one full export, then increments, each starting exactly at the cut
 * of the one before (`sinceHt` = the previous `cutHt`). `checkChain` is pure: it refuses a chain that
 * does not start with a full export, has a gap or an overlap, lacks a table in a link, or changes a
 * table's columns; and it picks the links a restore to `asOfHt` applies, and the digest to check.
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { Manifest, TableEntry } from './backup-format';

export interface ChainLink {
  dir: string;
  m: Manifest;
}

export interface ChainPlan {
  full: ChainLink;
  /** Increments to apply, each up to `uptoHt` (its cut, or the restore point inside it). */
  increments: Array<ChainLink & { uptoHt: bigint }>;
  /** The restore point. */
  targetHt: bigint;
  /** The link whose cut is the restore point: its digests must match (none: a point between cuts). */
  verifyWith?: ChainLink;
}

function chainError(part: string, message: string, details: Record<string, unknown> = {}): DbError {
  return new DbError(ErrorCode.INVALID_ARGUMENT, message, { part, ...details });
}

function sameColumns(a: TableEntry, b: TableEntry): boolean {
  return JSON.stringify(a.columns) === JSON.stringify(b.columns) && JSON.stringify(a.primaryKey) === JSON.stringify(b.primaryKey);
}

export function checkChain(links: readonly ChainLink[], tables: readonly string[], asOfHt?: bigint): ChainPlan {
  const [full, ...rest] = links;
  if (!full) throw chainError('CHAIN_ORDER', 'import: name an export (--from DIR)');
  if (full.m.kind === 'incremental') throw chainError('CHAIN_ORDER', `import: ${full.dir} is an incremental export; a chain starts with a full export (--from FULL --from INC1 ...)`);
  let prev = full;
  for (const l of rest) {
    if (l.m.kind !== 'incremental') throw chainError('CHAIN_ORDER', `import: ${l.dir} is a full export; after the first --from only increments follow`);
    const since = BigInt(l.m.sinceHt!);
    const cut = BigInt(prev.m.cutHt);
    if (since > cut) throw chainError('CHAIN_GAP', `import: a gap in the chain: ${l.dir} starts at ${since}, but ${prev.dir} ends at ${cut} (the changes between are in no export)`, { sinceHt: String(since), previousCutHt: String(cut) });
    if (since < cut) throw chainError('CHAIN_OVERLAP', `import: an overlap in the chain: ${l.dir} starts at ${since}, before ${prev.dir} ends at ${cut} (take each increment with --since the previous cut)`, { sinceHt: String(since), previousCutHt: String(cut) });
    for (const n of tables) {
      const t = l.m.tables.find((x) => x.name === n);
      if (!t) throw chainError('CHAIN_GAP', `import: ${l.dir} has no table ${n}: its changes in that window are in no export`, { table: n });
      if (!sameColumns(t, full.m.tables.find((x) => x.name === n)!)) throw new DbError(ErrorCode.NOT_SUPPORTED, `import: the columns or key of ${n} changed between ${full.dir} and ${l.dir}; a chain restores one schema`, { table: n });
    }
    prev = l;
  }
  const first = BigInt(full.m.cutHt);
  const last = BigInt(prev.m.cutHt);
  const targetHt = asOfHt ?? last;
  if (targetHt < first || targetHt > last) throw chainError('AS_OF', `import: --as_of ${targetHt} is outside the chain [${first}, ${last}]`, { firstCutHt: String(first), lastCutHt: String(last) });
  const increments = rest.filter((l) => BigInt(l.m.sinceHt!) < targetHt).map((l) => ({ ...l, uptoHt: BigInt(l.m.cutHt) < targetHt ? BigInt(l.m.cutHt) : targetHt }));
  const verifyWith = links.find((l) => BigInt(l.m.cutHt) === targetHt);
  return { full, increments, targetHt, ...(verifyWith ? { verifyWith } : {}) };
}
