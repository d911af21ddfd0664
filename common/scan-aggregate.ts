/**
 * Aggregates computed on the tablets (docs/sql.md, "Aggregates on the tablets"): a scan may ask its
 * tablet to fold the rows of each page into partial results — count(*), count(col), sum, min, max —
 * instead of sending them; the client merges the pages' partials. Shared by the tserver (fold) and
 * the client (merge), with the wire form of both (JSON in the scan's `aggregate` / `aggregates`).
 */
import { DbError, ErrorCode } from './errors';

export type AggregateFn = 'count' | 'sum' | 'min' | 'max';
const FNS: ReadonlySet<string> = new Set(['count', 'sum', 'min', 'max']);

/** One aggregate on the wire: `columnId` absent is count(*). */
export interface AggregateWireSpec {
  fn: AggregateFn;
  columnId?: number;
}

type Value = null | bigint | number | string | boolean | Uint8Array;

/** A partial result: rows (count(*)) or non-null values (the others) seen, and the value so far. */
export interface AggregatePartial {
  n: number;
  v: Value;
}

/** At most this many aggregates in one scan. */
export const AGGREGATES_MAX = 64;

export function parseAggregateSpecs(json: string, columnIds: ReadonlySet<number>): AggregateWireSpec[] {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    throw new DbError(ErrorCode.INVALID_ARGUMENT, 'scan aggregate: not JSON');
  }
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > AGGREGATES_MAX) throw new DbError(ErrorCode.INVALID_ARGUMENT, `scan aggregate: a list of 1 to ${AGGREGATES_MAX} aggregates`);
  return raw.map((x: unknown, i) => {
    const o = x as { fn?: unknown; columnId?: unknown };
    if (typeof o !== 'object' || o === null || typeof o.fn !== 'string' || !FNS.has(o.fn)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `scan aggregate ${i}: fn must be count, sum, min or max`);
    if (o.columnId === undefined) {
      if (o.fn !== 'count') throw new DbError(ErrorCode.INVALID_ARGUMENT, `scan aggregate ${i}: ${o.fn} needs a column`);
      return { fn: 'count' };
    }
    if (typeof o.columnId !== 'number' || !columnIds.has(o.columnId)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `scan aggregate ${i}: unknown column id ${String(o.columnId)}`);
    return { fn: o.fn as AggregateFn, columnId: o.columnId };
  });
}

export function emptyPartials(specs: readonly AggregateWireSpec[]): AggregatePartial[] {
  return specs.map(() => ({ n: 0, v: null }));
}

function compare(a: Value, b: Value): number {
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.compare(a, b);
  // NaN above every other double, as DocDB orders doubles and PostgreSQL's max/min take it.
  if (typeof a === 'number' && typeof b === 'number' && (Number.isNaN(a) || Number.isNaN(b))) return Number.isNaN(a) === Number.isNaN(b) ? 0 : Number.isNaN(a) ? 1 : -1;
  return (a as string) < (b as string) ? -1 : (a as string) > (b as string) ? 1 : 0;
}

function add(fn: AggregateFn, acc: AggregatePartial, n: number, v: Value): void {
  if (fn === 'count') {
    acc.n += n;
    return;
  }
  if (v === null || n === 0) return;
  if (acc.v === null) acc.v = v;
  else if (fn === 'sum') {
    if (typeof acc.v === 'bigint' && typeof v === 'bigint') acc.v += v;
    else if (typeof acc.v === 'number' && typeof v === 'number') acc.v += v;
    else throw new DbError(ErrorCode.INVALID_ARGUMENT, 'scan aggregate: sum of a column that is not int64 or double');
  } else if (typeof acc.v !== typeof v) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'scan aggregate: values of different types');
  else if ((fn === 'min' ? -1 : 1) * compare(v, acc.v) > 0) acc.v = v;
  acc.n += n;
}

/** Fold rows (cells by column id) into `acc` (the tablet's side). */
export function foldRows(specs: readonly AggregateWireSpec[], acc: AggregatePartial[], rows: ReadonlyArray<{ columns: ReadonlyMap<number, unknown> }>): void {
  specs.forEach((s, i) => {
    const a = acc[i]!;
    if (s.columnId === undefined) {
      a.n += rows.length;
      return;
    }
    if (s.fn === 'sum') {
      for (const r of rows) {
        const v = (r.columns.get(s.columnId) ?? null) as Value;
        if (v !== null && typeof v !== 'bigint' && typeof v !== 'number') throw new DbError(ErrorCode.INVALID_ARGUMENT, `scan aggregate: sum of column ${s.columnId}, which holds a ${typeof v}`);
      }
    }
    for (const r of rows) {
      const v = (r.columns.get(s.columnId) ?? null) as Value;
      if (v !== null) add(s.fn, a, 1, v);
    }
  });
}

/** Merge a page's partials into `acc` (the client's side). */
export function mergePartials(specs: readonly AggregateWireSpec[], acc: AggregatePartial[], page: readonly AggregatePartial[]): void {
  if (page.length !== specs.length) throw new DbError(ErrorCode.INTERNAL, `scan aggregate: ${page.length} partial results for ${specs.length} aggregates`);
  specs.forEach((s, i) => add(s.fn, acc[i]!, page[i]!.n, page[i]!.v));
}

export function encodePartials(p: readonly AggregatePartial[]): string {
  // JSON has no NaN or infinities: a double that is not finite travels as its text.
  return JSON.stringify(p.map(({ n, v }) => ({ n, v: typeof v === 'bigint' ? { i: v.toString() } : v instanceof Uint8Array ? { b: Buffer.from(v).toString('hex') } : typeof v === 'number' && !Number.isFinite(v) ? { d: String(v) } : v })));
}

export function decodePartials(s: string): AggregatePartial[] {
  const raw = JSON.parse(s) as Array<{ n: number; v: Value | { i: string } | { b: string } | { d: string } }>;
  return raw.map(({ n, v }) => {
    if (v === null || typeof v !== 'object' || v instanceof Uint8Array) return { n, v };
    if ('i' in v) return { n, v: BigInt(v.i) };
    if ('b' in v) return { n, v: new Uint8Array(Buffer.from(v.b, 'hex')) };
    return { n, v: Number(v.d) };
  });
}

/** The final value of each aggregate: count → its count, the others → their value (null over no values). */
export function finalValues(specs: readonly AggregateWireSpec[], acc: readonly AggregatePartial[]): Value[] {
  return specs.map((s, i) => (s.fn === 'count' ? BigInt(acc[i]!.n) : acc[i]!.v));
}
