/**
 * Filter semantics against a reference: random trees of the filters that keep no state (row key,
 * column, value, single-column-value, key-only, AND/OR, SKIP) over random data, evaluated by the
 * tablet's filtered scan and by a direct reading of each filter's definition (docs/filters.md) over
 * the rows an unfiltered scan returns. Row keys compare as UTF-8 bytes, as the key encoding orders
 * strings; values compare by type.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DocDb } from '../../docdb/doc-db';
import type { Primitive, Row } from '../../docdb/doc-db-api';
import { comparePrimitives } from '../../docdb/encoding/primitive';
import { compileFilter, literalAs, valueText, type Comparator, type CompareOp, type FilterAst } from '../../docdb/filters';
import { MemoryEngine } from '../../docdb/memory-engine';
import { Statuses } from './docdb-helpers';
import { applyWrites, COLS, filterSchema, htOf, leafArb, writesArb } from './filters-arbitraries';

type Cells = Map<number, Primitive>;
/** A row's verdict: undefined = rejected, else the cells kept. */
type Verdict = Cells | undefined;

const bytes = (s: string): Buffer => Buffer.from(s, 'utf8');
const cmpKey = (a: string, b: string): number => Buffer.compare(bytes(a), bytes(b));
const nameOf = (id: number): string => COLS.find((c) => c.id === id)!.name;
const typeOf = (id: number) => COLS.find((c) => c.id === id)!.type;

function holds(op: CompareOp, c: number): boolean {
  return op === '=' ? c === 0 : op === '!=' ? c !== 0 : op === '<' ? c < 0 : op === '<=' ? c <= 0 : op === '>' ? c > 0 : c >= 0;
}

function matches(v: Primitive, type: 'int64' | 'double' | 'string', op: CompareOp, cmp: Comparator): boolean {
  if (cmp.type === 'binary') {
    const lit = literalAs(cmp.value, type);
    return lit === undefined ? op === '!=' : holds(op, comparePrimitives(v, lit));
  }
  const t = valueText(v);
  const m = cmp.type === 'substring' ? t.toLowerCase().includes(cmp.value.toLowerCase()) : cmp.type === 'regex' ? new RegExp(cmp.pattern, 'u').test(t) : t.startsWith(cmp.value);
  return m === (op === '=');
}

function inRange(k: string, r: { start?: string; startInclusive: boolean; stop?: string; stopInclusive: boolean }): boolean {
  // Inclusive bounds cover the key itself; the leading key is the whole key here.
  if (r.start !== undefined && (r.startInclusive ? cmpKey(k, r.start) < 0 : cmpKey(k, r.start) <= 0)) return false;
  if (r.stop !== undefined && (r.stopInclusive ? cmpKey(k, r.stop) > 0 : cmpKey(k, r.stop) >= 0)) return false;
  return true;
}

const pick = (cells: Cells, keep: (id: number, v: Primitive) => boolean): Cells => new Map([...cells].filter(([id, v]) => keep(id, v)));

function ref(f: FilterAst, k: string, cells: Cells): Verdict {
  switch (f.type) {
    case 'prefix':
      return bytes(k).subarray(0, bytes(f.prefix as string).length).equals(bytes(f.prefix as string)) ? cells : undefined;
    case 'rowRange':
      return inRange(k, f as never) ? cells : undefined;
    case 'multiRowRange':
      return f.ranges.some((r) => inRange(k, r as never)) ? cells : undefined;
    case 'fuzzyRow': {
      const kb = bytes(k);
      const ok = f.patterns.some((p) => kb.length >= p.length && [...p].every((ch, i) => ch === '?' || kb[i] === ch.charCodeAt(0)));
      return ok ? cells : undefined;
    }
    case 'columnPrefix':
      return pick(cells, (id) => f.prefixes.some((p) => nameOf(id).startsWith(p)));
    case 'columnRange':
      return pick(cells, (id) => {
        const n = nameOf(id);
        return (f.min === undefined || (f.minInclusive ? n >= f.min : n > f.min)) && (f.max === undefined || (f.maxInclusive ? n <= f.max : n < f.max));
      });
    case 'qualifier':
      return pick(cells, (id) => matches(nameOf(id), 'string', f.op, f.comparator));
    case 'value':
      return pick(cells, (id, v) => matches(v, typeOf(id), f.op, f.comparator));
    case 'singleColumnValue': {
      const id = COLS.find((c) => c.name === f.column)!.id;
      const v = cells.get(id);
      if (v === undefined) return f.filterIfMissing ? undefined : cells;
      return matches(v, typeOf(id), f.op, f.comparator) ? cells : undefined;
    }
    case 'keyOnly':
      return new Map([...cells].map(([id]) => [id, null]));
    case 'list': {
      const vs = f.filters.map((c) => ref(c, k, cells));
      if (f.op === 'AND') {
        if (vs.some((v) => v === undefined)) return undefined;
        return andCells(vs as Cells[], cells);
      }
      const ok = vs.filter((v): v is Cells => v !== undefined);
      if (ok.length === 0) return undefined;
      return orCells(ok, cells);
    }
    case 'skip': {
      const v = ref(f.filter, k, cells);
      return v !== undefined && v.size === cells.size ? v : undefined;
    }
    default:
      throw new Error(`no reference for ${f.type}`);
  }
}

/** Cells every child kept, with the last child's transform (KeyOnly nulls win). */
function andCells(vs: Cells[], cells: Cells): Cells {
  const out: Cells = new Map();
  for (const [id, v] of cells) if (vs.every((c) => c.has(id))) out.set(id, vs.some((c) => c.get(id) === null) ? null : v);
  return out;
}
function orCells(vs: Cells[], cells: Cells): Cells {
  const out: Cells = new Map();
  for (const [id, v] of cells) if (vs.some((c) => c.has(id))) out.set(id, vs.some((c) => c.get(id) === null) ? null : v);
  return out;
}

function stateless(): fc.Arbitrary<FilterAst> {
  const leaf = leafArb([]).filter((f) => !['page', 'firstKeyOnly', 'columnPagination', 'timestamps'].includes(f.type));
  const { tree } = fc.letrec<{ tree: FilterAst }>((tie) => ({
    tree: fc.oneof(
      { depthSize: 'small' },
      leaf,
      fc.record({ op: fc.constantFrom('AND' as const, 'OR' as const), filters: fc.array(tie('tree'), { minLength: 1, maxLength: 3 }) }).map((l) => ({ type: 'list' as const, ...l })),
      tie('tree').map((filter) => ({ type: 'skip' as const, filter })),
    ),
  }));
  // KeyOnly is a transform, not a test: inside SKIP or OR its null values would need HBase's order
  // of transforms; keep it at the top level of the tree (or in a top-level AND).
  return tree.filter((t) => !JSON.stringify(t).includes('keyOnly') || t.type === 'keyOnly' || (t.type === 'list' && t.op === 'AND' && t.filters.every((c) => c.type === 'keyOnly' || !JSON.stringify(c).includes('keyOnly'))));
}

function show(rows: ReadonlyArray<{ k: string; cells: Cells }>): string[] {
  return rows.map((r) => `${r.k}:${[...r.cells].filter(([, v]) => v !== null).sort((a, b) => a[0] - b[0]).map(([id, v]) => `${id}=${String(v)}`).join(',')}`);
}

describe('filters: semantics against a reference', () => {
  it('random stateless filter trees: the tablet scan returns what each filter definition selects', async () => {
    await fc.assert(
      fc.asyncProperty(writesArb(false), fc.array(stateless(), { minLength: 1, maxLength: 6 }), async (ws, filters) => {
        const db = await DocDb.open({ regular: new MemoryEngine(), intents: new MemoryEngine() });
        try {
          const statuses = new Statuses();
          await applyWrites(db, ws, statuses);
          const all: Row[] = (await db.scan({ readHt: htOf(500), resolveStatus: statuses.resolve })).rows;
          for (const f of filters) {
            const got = (await db.scan({ readHt: htOf(500), resolveStatus: statuses.resolve, filter: compileFilter(f, filterSchema(false)) })).rows.map((r) => ({ k: r.key.range[0] as string, cells: r.columns }));
            const want: Array<{ k: string; cells: Cells }> = [];
            for (const r of all) {
              const k = r.key.range[0] as string;
              const v = ref(f, k, r.columns);
              if (v !== undefined && (v.size > 0 || r.columns.size === 0)) want.push({ k, cells: v });
            }
            expect(show(got), JSON.stringify(f)).toEqual(show(want));
          }
        } finally {
          await db.close();
        }
      }),
      { numRuns: 200 },
    );
  });
});
