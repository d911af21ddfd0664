/**
 * One parse for statements that differ only in their integer literals (docs/sql.md "Parse cache").
 * `pgbench -S` sends `SELECT abalance FROM pgbench_accounts WHERE aid = 4711;` with a new aid every
 * time, over the simple query protocol: no prepared statement to reuse, and each parse (the
 * WebAssembly parser, then JSON.parse of its tree) was about a tenth of the SQL node's main thread.
 *
 * A text's key is the text with every plain integer literal (1 … 2^31-1, a run of digits outside
 * quotes) replaced by a marker. The first text of a key is parsed as always; if each of its literals
 * is exactly one `A_Const` integer at the literal's position, the tree is kept as the key's template.
 * A later text of the key gets a copy of the template with its own literal values and every
 * offset (`location`, `list_start`, …) shifted by the differences in literal lengths before it: the tree PostgreSQL's parser
 * gives that text, since the grammar sees the same tokens (a literal in this range is always ICONST)
 * and only their values and offsets differ. Texts the scan is not sure about (comments, backslashes,
 * dollar quoting, a marker character) and statements other than SELECT / INSERT / UPDATE / DELETE and
 * the transaction statements (BEGIN, END, COMMIT, ROLLBACK, SAVEPOINT …) are parsed every time.
 */
import type { Node } from 'libpg-query';

/** Templates kept per process; the oldest is dropped past it. */
export const PARSE_CACHE_ENTRIES_MAX = 1000;
/** Longer texts are parsed every time (a key the size of a bulk INSERT is not worth keeping). */
export const PARSE_CACHE_TEXT_CHARS_MAX = 4096;

const MARKER = '\u0001';
const INT4_MAX = 2 ** 31 - 1;
/** BEGIN / END / COMMIT / ROLLBACK / SAVEPOINT too: pgbench -N sends BEGIN; and END; per transaction (2.6 % of the SQL node at -N -c 16, parsed). */
const CACHED_KINDS = new Set(['SelectStmt', 'InsertStmt', 'UpdateStmt', 'DeleteStmt', 'TransactionStmt']);
/** Fields of the parser's nodes that are offsets into the text (libpg-query's node types). */
const OFFSET_FIELDS = new Set(['location', 'name_location', 'list_start', 'list_end', 'rexpr_list_start', 'rexpr_list_end']);

export interface Literal {
  start: number;
  end: number;
  value: number;
  /** A `-` right before it: the grammar may fold it into the constant (see remember). */
  minus: boolean;
}

/** A statement the cache hands out: sql-parser.ts's ParsedStatement without YugabyteDB options (never cached). */
export interface CachedStatement {
  stmt: Node;
  sql: string;
  /** The template this statement was copied from and its literal values (the plan cache's key, sql/exec/plan-cache.ts). */
  template?: TemplateRef;
}

/**
 * A template's statement and its constants: `consts` maps an A_Const node of `stmt` to the index of
 * its literal in `values` (~index for a negated one). `stmt` is shared: never changed.
 */
export interface TemplateRef {
  stmt: Node;
  consts: ReadonlyMap<object, number>;
  values: number[];
}

export interface LiteralScan {
  key: string;
  literals: Literal[];
}

interface Template {
  /** The statements of the text the template was made from, with their offsets in that text. */
  stmts: Array<{ stmt: Node; start: number; end: number }>;
  literals: Literal[];
  /** The A_Const node objects of the template: their literal's index, or ~index for a negated one (`-5`). */
  consts: Map<object, number>;
}

const isDigit = (c: number): boolean => c >= 48 && c <= 57;
const isWordChar = (c: number): boolean => (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95 || isDigit(c) || c === 36 || c >= 128;

/** Literals and key of a text, or undefined when the text is not one the cache takes. */
export function scanLiterals(sql: string): LiteralScan | undefined {
  if (sql.length > PARSE_CACHE_TEXT_CHARS_MAX || /[\\\u0001]|--|\/\*|\$(?![0-9])/.test(sql)) return undefined;
  const literals: Literal[] = [];
  let key = '';
  let from = 0;
  let i = 0;
  while (i < sql.length) {
    const c = sql.charCodeAt(i);
    if (c === 39 || c === 34) {
      // '…' or "…": a doubled quote stays inside (no backslashes here: refused above).
      const close = sql.indexOf(c === 39 ? "'" : '"', i + 1);
      if (close < 0) return undefined;
      i = close + 1;
    } else if (isWordChar(c) && !isDigit(c)) {
      while (i < sql.length && isWordChar(sql.charCodeAt(i))) i++;
    } else if (isDigit(c) || (c === 46 && isDigit(sql.charCodeAt(i + 1)))) {
      const start = i;
      while (i < sql.length && isDigit(sql.charCodeAt(i))) i++;
      const next = sql.charCodeAt(i);
      if (next === 46 || next === 101 || next === 69 || (i < sql.length && isWordChar(next))) {
        // 1.5, 1e3, 12abc: not a plain integer; it stays in the key as written.
        while (i < sql.length && (isWordChar(sql.charCodeAt(i)) || sql.charCodeAt(i) === 46)) i++;
        continue;
      }
      const value = Number(sql.slice(start, i));
      if (c === 46 || value < 1 || value > INT4_MAX || sql.charCodeAt(start - 1) === 36) continue;
      literals.push({ start, end: i, value, minus: sql.charCodeAt(start - 1) === 45 });
      key += sql.slice(from, start) + MARKER;
      from = i;
    } else i++;
  }
  return { key: key + sql.slice(from), literals };
}

export class ParseCache {
  /** Key → template, or null for a key whose first text did not make one (parsed every time). */
  private readonly entries = new Map<string, Template | null>();
  hits = 0;

  constructor(private readonly max = PARSE_CACHE_ENTRIES_MAX) {}

  /** The statements of `sql` from a template, or undefined (the caller parses, then calls remember). */
  lookup(sql: string, scan: LiteralScan): CachedStatement[] | undefined {
    const t = this.entries.get(scan.key);
    if (!t || t.literals.length !== scan.literals.length) return undefined;
    this.hits++;
    const shift = shifter(t.literals, scan.literals);
    const values = scan.literals.map((l) => l.value);
    return t.stmts.map((s) => {
      // The copy is made when the tree is first asked for: a statement the plan cache runs never is.
      let copy: Node | undefined;
      const literals = scan.literals;
      return {
        get stmt(): Node {
          return (copy ??= cloneNode(s.stmt, t.consts, literals, shift) as Node);
        },
        sql: sql.slice(shift(s.start), shift(s.end)).trim(),
        template: { stmt: s.stmt, consts: t.consts, values },
      };
    });
  }

  /** Keep the parse of `sql` as its key's template when its literals are where the scan put them. */
  remember(scan: LiteralScan, stmts: ReadonlyArray<{ stmt: Node; start: number; end: number; yb: boolean }>): void {
    if (this.entries.has(scan.key)) return;
    if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value!);
    const ok = stmts.every((s) => !s.yb && CACHED_KINDS.has(Object.keys(s.stmt)[0]!));
    const consts = new Map<object, number>();
    const seen = new Set<number>();
    const byStart = new Map(scan.literals.map((l, i) => [l.start, i]));
    let found = 0;
    const visit = (n: unknown): boolean => {
      if (Array.isArray(n)) return n.every(visit);
      if (n === null || typeof n !== 'object') return true;
      const a = (n as { A_Const?: { ival?: { ival?: number }; location?: number } }).A_Const;
      let at = a?.location !== undefined ? byStart.get(a.location) : undefined;
      // `-5` where the grammar reads a negative constant: one A_Const of -5 at the minus sign (its
      // doNegate). Every text of the key has the same minus before the same token, so the same fold.
      const negated = a?.location !== undefined && at === undefined && scan.literals[byStart.get(a.location + 1) ?? -1]?.minus === true;
      if (negated) at = byStart.get(a!.location! + 1);
      if (a && at !== undefined) {
        // Exactly the literal's integer (or its negation at the minus), once: else the grammar did something else with it.
        if (a.ival?.ival !== (negated ? -1 : 1) * scan.literals[at]!.value || seen.has(at)) return false;
        seen.add(at);
        consts.set(a, negated ? ~at : at);
        found++;
      }
      return Object.values(n).every(visit);
    };
    const stmtsCopy = stmts.map((s) => ({ stmt: cloneNode(s.stmt, new Map(), [], (x) => x) as Node, start: s.start, end: s.end }));
    const fits = ok && stmtsCopy.every((s) => visit(s.stmt)) && found === scan.literals.length;
    this.entries.set(scan.key, fits ? { stmts: stmtsCopy, literals: scan.literals, consts } : null);
  }

  get size(): number {
    return this.entries.size;
  }
}

/** Offset in the template's text → offset in the new text (literals before it changed length). */
function shifter(from: Literal[], to: Literal[]): (pos: number) => number {
  return (pos) => {
    if (pos < 0) return pos;
    let d = 0;
    for (let i = 0; i < from.length && from[i]!.start < pos; i++) d += to[i]!.end - to[i]!.start - (from[i]!.end - from[i]!.start);
    return pos + d;
  };
}

/** A deep copy of a parse tree, literal constants replaced and locations shifted. */
function cloneNode(n: unknown, consts: Map<object, number>, values: Literal[], shift: (pos: number) => number): unknown {
  if (Array.isArray(n)) return n.map((x) => cloneNode(x, consts, values, shift));
  if (n === null || typeof n !== 'object') return n;
  const o = n as Record<string, unknown>;
  const lit = o.A_Const !== undefined ? consts.get(o.A_Const as object) : undefined;
  const out: Record<string, unknown> = {};
  for (const k in o) {
    const v = o[k];
    if (typeof v === 'number' && OFFSET_FIELDS.has(k)) out[k] = shift(v);
    else out[k] = cloneNode(v, consts, values, shift);
  }
  if (lit !== undefined) (out.A_Const as { ival: { ival: number } }).ival = { ival: lit >= 0 ? values[lit]!.value : -values[~lit]!.value };
  return out;
}
