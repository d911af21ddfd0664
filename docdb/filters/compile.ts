/**
 * Filter AST → evaluators, against a table's schema: column names become ids, literals become
 * values of the column's type, and row key values become encoded key bounds (row-filters.ts).
 * Runs on the tablet for every scan that carries a filter (and in the client, to fail early); an
 * unknown column or a literal of the wrong type for a key column is INVALID_ARGUMENT naming it.
 */
import { ByteWriter } from '../encoding/byte-buffer';
import { comparePrimitives, encodePrimitive } from '../encoding/primitive';
import type { Primitive } from '../encoding/types';
import { filterInvalid, type Comparator, type CompareOp, type FilterAst, type FilterLiteral, type RowRange } from '../../common/filter-ast';
import { ColumnPaginationFilter, ColumnSetFilter, FirstKeyOnlyFilter, KeyOnlyFilter, PageFilter, SingleColumnValueFilter, TimestampsFilter, ValueFilter, type ValueTest } from './cell-filters';
import type { CellFilter, FilterCell } from './evaluator';
import { AndFilter, OrFilter, WholeRowFilter } from './list-filters';
import { FuzzyRowFilter, mergeRanges, PrefixRowFilter, RangeRowFilter, type ByteRange, type FuzzyPattern, type RowKeyShape } from './row-filters';

export type FilterColumnType = 'int64' | 'double' | 'string' | 'bytes' | 'bool';

/** The part of a table schema filters need (a tablet's TableSchema has this shape). */
export interface FilterSchema {
  /** `family`: the column's family, once tables have them (until then a filter's family is not checked). */
  columns: ReadonlyArray<{ name: string; id: number; type: FilterColumnType; family?: string }>;
  hashColumns: readonly string[];
  rangeColumns: readonly string[];
}

/** The family every column belongs to until tables have column families. */
export const DEFAULT_FAMILY = 'default';

/** A literal as a value of `type`, or undefined when it has no such value ('abc' for an int64). */
export function literalAs(lit: FilterLiteral, type: FilterColumnType): Primitive | undefined {
  const text = typeof lit === 'object' ? ('int' in lit ? lit.int : undefined) : String(lit);
  switch (type) {
    case 'int64': {
      if (typeof lit === 'number') return Number.isInteger(lit) ? BigInt(lit) : undefined;
      if (text === undefined || !/^-?[0-9]{1,19}$/.test(text.trim())) return undefined;
      const n = BigInt(text.trim());
      return n >= -(1n << 63n) && n < 1n << 63n ? n : undefined;
    }
    case 'double': {
      if (typeof lit === 'number') return lit;
      if (text === undefined || text.trim() === '') return undefined;
      const n = Number(text);
      return Number.isNaN(n) && text.trim() !== 'NaN' ? undefined : n;
    }
    case 'string':
      return typeof lit === 'object' && 'bytes' in lit ? undefined : text;
    case 'bytes':
      return typeof lit === 'object' && 'bytes' in lit ? Buffer.from(lit.bytes, 'hex') : typeof lit === 'string' ? Buffer.from(lit, 'utf8') : undefined;
    case 'bool':
      return lit === true || lit === 'true' ? true : lit === false || lit === 'false' ? false : undefined;
  }
}

/** A value's text form, for the text comparators (substring, regex, binaryprefix). */
export function valueText(v: Primitive): string {
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8');
  return String(v);
}

function opHolds(op: CompareOp, c: number): boolean {
  switch (op) {
    case '=':
      return c === 0;
    case '!=':
      return c !== 0;
    case '<':
      return c < 0;
    case '<=':
      return c <= 0;
    case '>':
      return c > 0;
    case '>=':
      return c >= 0;
  }
}

/** A test of a cell's value: `value op literal`, the literal taken as the cell's column type. */
function valueTest(op: CompareOp, cmp: Comparator, typeOf: (columnId: number) => FilterColumnType | undefined): ValueTest {
  if (cmp.type === 'binary') {
    const lits = new Map<number, Primitive | undefined>();
    return (cell: FilterCell) => {
      if (!lits.has(cell.columnId)) {
        const t = typeOf(cell.columnId);
        lits.set(cell.columnId, t === undefined ? undefined : literalAs(cmp.value, t));
      }
      const lit = lits.get(cell.columnId);
      // A literal with no value of the column's type ('abc' for an int64) differs from every value
      // of it, and is neither below nor above any.
      if (lit === undefined) return op === '!=';
      return cell.value !== null && opHolds(op, comparePrimitives(cell.value, lit));
    };
  }
  let match: (text: string) => boolean;
  if (cmp.type === 'regex') {
    const re = new RegExp(cmp.pattern, 'u');
    match = (t) => re.test(t);
  } else if (cmp.type === 'substring') {
    const needle = cmp.value.toLowerCase();
    match = (t) => t.toLowerCase().includes(needle);
  } else {
    const p = cmp.value;
    match = (t) => t.startsWith(p);
  }
  return (cell) => cell.value !== null && match(valueText(cell.value)) === (op === '=');
}

function encodeComponent(v: Primitive): Buffer {
  const w = new ByteWriter(16);
  encodePrimitive(w, v);
  return w.finish();
}

class Compiler {
  private readonly keyNames: ReadonlySet<string>;
  private readonly types = new Map<number, FilterColumnType>();
  /** Non-key columns by name (cells are non-key columns only; keys live in the DocKey). */
  private readonly cols = new Map<string, number>();

  constructor(private readonly schema: FilterSchema) {
    this.keyNames = new Set([...schema.hashColumns, ...schema.rangeColumns]);
    for (const c of schema.columns) {
      if (this.keyNames.has(c.name)) continue;
      this.cols.set(c.name, c.id);
      this.types.set(c.id, c.type);
    }
  }

  private leadingKey(path: string): { type: FilterColumnType; name: string; shape: RowKeyShape } {
    const hashed = this.schema.hashColumns.length > 0;
    const name = hashed ? this.schema.hashColumns[0] : this.schema.rangeColumns[0];
    const col = this.schema.columns.find((c) => c.name === name);
    if (!col) throw filterInvalid(path, 'the table has no key column');
    return { type: col.type, name: col.name, shape: { offset: hashed ? 3 : 0, seekable: !hashed } };
  }

  private keyValue(lit: FilterLiteral, path: string): { bytes: Buffer; text: boolean } {
    const k = this.leadingKey(path);
    const v = literalAs(lit, k.type);
    if (v === undefined || v === null) throw filterInvalid(path, `${JSON.stringify(lit)} is not a ${k.type} value of key column ${k.name}`);
    return { bytes: encodeComponent(v), text: k.type === 'string' || k.type === 'bytes' };
  }

  private range(r: RowRange, path: string): ByteRange {
    const lo = r.start === undefined ? Buffer.alloc(0) : this.keyValue(r.start, `${path}.start`).bytes;
    const hi = r.stop === undefined ? undefined : this.keyValue(r.stop, `${path}.stop`).bytes;
    return {
      // Every key whose leading value is v starts with enc(v); past all of them is prefixEnd(enc(v)).
      lo: r.start === undefined || r.startInclusive ? lo : bytesAfterPrefix(lo),
      hi: hi === undefined ? undefined : r.stopInclusive ? bytesAfterPrefix(hi) : hi,
    };
  }

  private columnIds(pick: (name: string) => boolean): number[] {
    const ids = [...this.cols].filter(([n]) => pick(n)).map(([, id]) => id);
    return ids.sort((a, b) => a - b);
  }

  node(f: FilterAst, path: string): CellFilter {
    const typeOf = (id: number): FilterColumnType | undefined => this.types.get(id);
    switch (f.type) {
      case 'prefix': {
        const k = this.keyValue(f.prefix, `${path}.prefix`);
        // A text key's encoding is tag + escaped bytes + 00 00: without the terminator it is a prefix.
        return new PrefixRowFilter(k.text ? k.bytes.subarray(0, k.bytes.length - 2) : k.bytes, this.leadingKey(path).shape);
      }
      case 'rowRange':
        return new RangeRowFilter(mergeRanges([this.range(f, path)]), this.leadingKey(path).shape);
      case 'multiRowRange':
        return new RangeRowFilter(mergeRanges(f.ranges.map((r, i) => this.range(r, `${path}.ranges[${i}]`))), this.leadingKey(path).shape);
      case 'fuzzyRow':
        return new FuzzyRowFilter(f.patterns.map((p, i) => this.fuzzy(p, `${path}.patterns[${i}]`)), this.leadingKey(path).shape);
      case 'columnPrefix':
        return new ColumnSetFilter(this.columnIds((n) => f.prefixes.some((p) => n.startsWith(p))), true);
      case 'columnRange':
        return new ColumnSetFilter(
          this.columnIds((n) => (f.min === undefined || (f.minInclusive ? n >= f.min : n > f.min)) && (f.max === undefined || (f.maxInclusive ? n <= f.max : n < f.max))),
          true,
        );
      case 'qualifier': {
        const t = valueTest(f.op, f.comparator, () => 'string');
        return new ColumnSetFilter(this.columnIds((n) => t({ columnId: 0, ht: 0n, value: n })), false);
      }
      case 'value':
        return new ValueFilter(valueTest(f.op, f.comparator, typeOf));
      case 'singleColumnValue': {
        if (this.keyNames.has(f.column)) throw filterInvalid(`${path}.column`, `${f.column} is a key column (use a row filter)`);
        const id = this.cols.get(f.column);
        if (id === undefined) throw filterInvalid(`${path}.column`, `unknown column ${f.column}`);
        this.checkFamily(f.family, f.column, `${path}.family`);
        return new SingleColumnValueFilter(id, valueTest(f.op, f.comparator, typeOf), f.filterIfMissing);
      }
      case 'keyOnly':
        return new KeyOnlyFilter();
      case 'firstKeyOnly':
        return new FirstKeyOnlyFilter();
      case 'page':
        return new PageFilter(f.rows);
      case 'columnPagination':
        return new ColumnPaginationFilter(f.limit, f.offset);
      case 'timestamps':
        return new TimestampsFilter(new Set(f.timestamps.map((t) => BigInt(t))));
      case 'list': {
        const kids = f.filters.map((c, i) => this.node(c, `${path}.filters[${i}]`));
        return f.op === 'AND' ? new AndFilter(kids) : new OrFilter(kids);
      }
      case 'skip':
      case 'while':
        return new WholeRowFilter(this.node(f.filter, `${path}.filter`), f.type === 'while');
    }
  }

  /** Families are checked once the schema has them; a column without one is in DEFAULT_FAMILY. */
  private checkFamily(family: string | undefined, column: string, path: string): void {
    if (family === undefined || family === '' || !this.schema.columns.some((c) => c.family !== undefined)) return;
    const families = new Set(this.schema.columns.map((c) => c.family ?? DEFAULT_FAMILY));
    if (!families.has(family)) throw filterInvalid(path, `unknown column family ${family}`);
    const col = this.schema.columns.find((c) => c.name === column);
    if ((col?.family ?? DEFAULT_FAMILY) !== family) throw filterInvalid(path, `column ${column} is not in family ${family}`);
  }

  private fuzzy(p: string, path: string): FuzzyPattern {
    const k = this.leadingKey(path);
    if (k.type !== 'string') throw filterInvalid(path, `a fuzzy row pattern needs a string leading key column (${k.name} is ${k.type})`);
    if (p.includes('\0')) throw filterInvalid(path, 'a fuzzy row pattern must not contain NUL');
    const body = Buffer.from(p, 'utf8');
    const enc = encodeComponent(p);
    // tag + the pattern's bytes (no NUL, so no escapes); '?' bytes are the wildcards.
    const bytes = enc.subarray(0, 1 + body.length);
    return { bytes, any: [false, ...[...body].map((b) => b === 0x3f)] };
  }
}

/** The first byte string above every string that starts with `p` (p is never all 0xff here: a tag leads). */
function bytesAfterPrefix(p: Buffer): Buffer {
  const b = Buffer.from(p);
  for (let i = b.length - 1; i >= 0; i--) {
    if (b[i]! < 0xff) {
      b[i]!++;
      return b.subarray(0, i + 1);
    }
  }
  return Buffer.concat([p, Buffer.from([0xff])]);
}

/** Build a fresh evaluator (filters keep per-scan state: build one per scan call). */
export function compileFilter(f: FilterAst, schema: FilterSchema): CellFilter {
  return new Compiler(schema).node(f, 'filter');
}
