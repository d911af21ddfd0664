/**
 * Column families (HBase's per-family retention, docs/cells.md): every column belongs to one family
 * (`default` when none is named), and a family says how many versions of a cell are kept (VERSIONS),
 * how many survive past the TTL (MIN_VERSIONS, HBASE-4071), how long a cell lives (TTL seconds),
 * whether deleted cells stay readable by time-range reads before the delete (KEEP_DELETED_CELLS,
 * HBASE-4536), and the family's write durability (absent: the table's, docs/durability.md).
 *
 * Pure: the master validates with it, the tablet reads retention from it (it travels inside the
 * schema every replica gets, so a leader change or a remote bootstrap keeps it), the CLI parses
 * `--family 'cf1:VERSIONS=3,TTL=10'` with it.
 */
import { DbError, ErrorCode } from './errors';

export const DEFAULT_FAMILY = 'default';
/** Versions a family keeps at most (bounds what one read of one cell returns). */
export const FAMILY_VERSIONS_MAX = 10_000;
/** Families per table at most. */
export const FAMILIES_PER_TABLE_MAX = 64;
/** TTL seconds at most (about 290 years: far beyond any retention, and ms fit in a double). */
export const FAMILY_TTL_SEC_MAX = 9_000_000_000;

export const KEEP_DELETED_CELLS = ['false', 'true', 'ttl'] as const;
export type KeepDeletedCells = (typeof KEEP_DELETED_CELLS)[number];

export interface ColumnFamily {
  name: string;
  /** Versions of one cell kept (and returned) at most; ≥ 1. */
  versions: number;
  /** Versions of one cell kept even past the TTL; ≤ versions. */
  minVersions: number;
  /** Seconds a cell lives after its timestamp; 0 = forever. */
  ttlSec: number;
  keepDeletedCells: KeepDeletedCells;
  /** ASYNC | FLUSH | FSYNC, or undefined: the table's durability. */
  durability?: string;
}

export function defaultFamily(name = DEFAULT_FAMILY): ColumnFamily {
  return { name, versions: 1, minVersions: 0, ttlSec: 0, keepDeletedCells: 'false' };
}

function invalid(msg: string, details: Record<string, unknown> = {}): DbError {
  return new DbError(ErrorCode.INVALID_ARGUMENT, msg, details);
}

const FAMILY_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const DURABILITIES = ['ASYNC', 'FLUSH', 'FSYNC'];

function intIn(family: string, part: string, v: unknown, min: number, max: number): number {
  const n = typeof v === 'string' ? (/^\d+$/.test(v.trim()) ? Number(v.trim()) : NaN) : typeof v === 'bigint' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < min || n > max) {
    throw invalid(`family ${family}: ${part} must be an integer in [${min}, ${max}], not '${String(v)}'`, { family, part });
  }
  return n;
}

/** One family from loose input (a wire message, JSON, the CLI): every part checked, defaults filled. */
export function checkFamily(input: { name?: string; versions?: unknown; minVersions?: unknown; ttlSec?: unknown; keepDeletedCells?: unknown; durability?: unknown }): ColumnFamily {
  const name = input.name ?? '';
  if (!FAMILY_NAME_RE.test(name)) throw invalid(`family name '${name}' is not valid: 1-64 letters, digits and _, not starting with a digit`, { part: 'NAME' });
  const f = defaultFamily(name);
  if (input.versions !== undefined && input.versions !== 0) f.versions = intIn(name, 'VERSIONS', input.versions, 1, FAMILY_VERSIONS_MAX);
  if (input.minVersions !== undefined) f.minVersions = intIn(name, 'MIN_VERSIONS', input.minVersions, 0, FAMILY_VERSIONS_MAX);
  if (input.ttlSec !== undefined) f.ttlSec = intIn(name, 'TTL', input.ttlSec, 0, FAMILY_TTL_SEC_MAX);
  if (f.minVersions > f.versions) throw invalid(`family ${name}: MIN_VERSIONS ${f.minVersions} is more than VERSIONS ${f.versions}`, { family: name, part: 'MIN_VERSIONS' });
  const kdc = input.keepDeletedCells;
  if (kdc !== undefined && kdc !== '') {
    const k = String(kdc).toLowerCase();
    if (!(KEEP_DELETED_CELLS as readonly string[]).includes(k)) throw invalid(`family ${name}: KEEP_DELETED_CELLS must be false, true or ttl, not '${String(kdc)}'`, { family: name, part: 'KEEP_DELETED_CELLS' });
    f.keepDeletedCells = k as KeepDeletedCells;
  }
  const d = input.durability;
  if (d !== undefined && d !== '') {
    const up = String(d).toUpperCase();
    if (!DURABILITIES.includes(up)) throw invalid(`family ${name}: DURABILITY must be ASYNC, FLUSH or FSYNC, not '${String(d)}'`, { family: name, part: 'DURABILITY' });
    f.durability = up;
  }
  return f;
}

/**
 * `cf1:VERSIONS=3,TTL=10,MIN_VERSIONS=1,KEEP_DELETED_CELLS=true,DURABILITY=FLUSH` (HBase shell's
 * attribute names; a bare `cf1` is a family with the defaults).
 */
export function parseFamilySpec(text: string): ColumnFamily {
  const s = text.trim();
  const colon = s.indexOf(':');
  const name = colon < 0 ? s : s.slice(0, colon);
  const input: Parameters<typeof checkFamily>[0] = { name };
  if (colon >= 0) {
    for (const part of s.slice(colon + 1).split(',').map((p) => p.trim()).filter(Boolean)) {
      const eq = part.indexOf('=');
      if (eq <= 0) throw invalid(`family ${name}: '${part}' must look like ATTRIBUTE=value`, { family: name, part });
      const key = part.slice(0, eq).trim().toUpperCase();
      const v = part.slice(eq + 1).trim();
      if (key === 'VERSIONS') input.versions = v;
      else if (key === 'MIN_VERSIONS') input.minVersions = v;
      else if (key === 'TTL') input.ttlSec = v.toUpperCase() === 'FOREVER' ? '0' : v;
      else if (key === 'KEEP_DELETED_CELLS') input.keepDeletedCells = v;
      else if (key === 'DURABILITY') input.durability = v;
      else throw invalid(`family ${name}: unknown attribute ${key} (VERSIONS, MIN_VERSIONS, TTL, KEEP_DELETED_CELLS, DURABILITY)`, { family: name, part: key });
    }
  }
  return checkFamily(input);
}

/** The families of a schema with every column's family checked: `default` added when a column needs it. */
export function checkFamilies(families: readonly ColumnFamily[] | undefined, columns: ReadonlyArray<{ name: string; family?: string }>): ColumnFamily[] {
  const out: ColumnFamily[] = [];
  const seen = new Set<string>();
  for (const f of families ?? []) {
    const c = checkFamily(f);
    if (seen.has(c.name)) throw invalid(`family ${c.name} is declared twice`, { family: c.name, part: 'NAME' });
    seen.add(c.name);
    out.push(c);
  }
  for (const col of columns) {
    const fam = col.family || DEFAULT_FAMILY;
    if (seen.has(fam)) continue;
    if (fam !== DEFAULT_FAMILY) throw invalid(`column ${col.name} names family ${fam}, which the table does not have (${[...seen].join(', ') || 'none declared'})`, { column: col.name, family: fam, part: 'FAMILY' });
    seen.add(fam);
    out.push(defaultFamily());
  }
  if (out.length > FAMILIES_PER_TABLE_MAX) throw invalid(`a table has at most ${FAMILIES_PER_TABLE_MAX} families, not ${out.length}`, { part: 'FAMILY' });
  return out;
}

/** `VERSIONS=3, MIN_VERSIONS=1, TTL=10, KEEP_DELETED_CELLS=true` (describe-table, the console). */
export function familyAttributes(f: ColumnFamily): string {
  const parts = [`VERSIONS=${f.versions}`, `MIN_VERSIONS=${f.minVersions}`, `TTL=${f.ttlSec === 0 ? 'FOREVER' : f.ttlSec}`, `KEEP_DELETED_CELLS=${f.keepDeletedCells}`];
  parts.push(`DURABILITY=${f.durability ?? 'table'}`);
  return parts.join(', ');
}

/** The family of a column (by its family name; `default` when unnamed), falling back to the defaults. */
export function familyNamed(families: readonly ColumnFamily[] | undefined, name: string | undefined): ColumnFamily {
  const n = name || DEFAULT_FAMILY;
  return families?.find((f) => f.name === n) ?? defaultFamily(n);
}
