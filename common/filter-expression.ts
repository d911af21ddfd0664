/**
 * The filter expression language of the CLI, after HBase's shell filter language:
 *
 *   PrefixFilter('user1') AND SingleColumnValueFilter('cf', 'age', >=, 'binary:30', true)
 *   (ValueFilter(=, 'substring:foo') OR ColumnPrefixFilter('a')) AND PageFilter(10)
 *   SKIP ValueFilter(!=, 'binary:0')        WHILE RowRangeFilter('a', true, 'm', false)
 *
 * Precedence as HBase's: SKIP and WHILE bind tightest, then AND, then OR; parentheses group.
 * Arguments are quoted strings ('' escapes a quote), numbers, true/false, and the comparison
 * operators; comparators are 'binary:v', 'binaryprefix:v', 'substring:v', 'regexstring:v'.
 * Every error is INVALID_ARGUMENT naming the position (0-based character offset) and the part.
 */
import { DbError, ErrorCode } from './errors';
import { COMPARE_OPS, FILTER_NODES_MAX, parseFilterJson, type Comparator, type CompareOp, type FilterAst, type FilterLiteral, type RowRange } from './filter-ast';

type Token =
  | { t: 'name'; v: string; at: number }
  | { t: 'str'; v: string; at: number }
  | { t: 'num'; v: string; at: number }
  | { t: 'op'; v: CompareOp; at: number }
  | { t: '(' | ')' | ','; at: number }
  | { t: 'end'; at: number };

/** Characters of an expression at most. */
export const FILTER_EXPRESSION_CHARS_MAX = 16_384;

export function expressionError(at: number, src: string, why: string): DbError {
  const near = src.slice(at, at + 20);
  return new DbError(ErrorCode.INVALID_ARGUMENT, `bad filter expression at position ${at}${near ? ` (near '${near}')` : ' (at the end)'}: ${why}`, { position: at });
}

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const ch = src[i]!;
    if (/\s/.test(ch)) {
      i++;
      continue;
    }
    const at = i;
    if (ch === '(' || ch === ')' || ch === ',') {
      out.push({ t: ch, at });
      i++;
    } else if (ch === "'") {
      let v = '';
      for (i++; ; i++) {
        if (i >= src.length) throw expressionError(at, src, 'unterminated string');
        if (src[i] === "'") {
          if (src[i + 1] === "'") {
            v += "'";
            i++;
            continue;
          }
          i++;
          break;
        }
        v += src[i];
      }
      out.push({ t: 'str', v, at });
    } else if (/[<>=!]/.test(ch)) {
      const two = src.slice(i, i + 2);
      const v = (['<=', '>=', '!='] as string[]).includes(two) ? two : ch;
      if (!(COMPARE_OPS as readonly string[]).includes(v)) throw expressionError(at, src, `unknown operator ${v}`);
      out.push({ t: 'op', v: v as CompareOp, at });
      i += v.length;
    } else if (/[-0-9]/.test(ch)) {
      const m = /^-?[0-9]+(\.[0-9]+)?/.exec(src.slice(i));
      if (!m) throw expressionError(at, src, 'expected a number');
      out.push({ t: 'num', v: m[0], at });
      i += m[0].length;
    } else if (/[A-Za-z_]/.test(ch)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i))!;
      out.push({ t: 'name', v: m[0], at });
      i += m[0].length;
    } else throw expressionError(at, src, `unexpected character ${JSON.stringify(ch)}`);
  }
  out.push({ t: 'end', at: src.length });
  return out;
}

type Arg = Exclude<Token, { t: '(' | ')' | ',' | 'end' }>;

class Parser {
  private i = 0;
  private calls = 0;
  constructor(
    private readonly src: string,
    private readonly toks: Token[],
  ) {}

  private peek(): Token {
    return this.toks[this.i]!;
  }
  private err(at: number, why: string): DbError {
    return expressionError(at, this.src, why);
  }
  private keyword(k: string): boolean {
    const t = this.peek();
    if (t.t === 'name' && t.v.toUpperCase() === k) {
      this.i++;
      return true;
    }
    return false;
  }

  parse(): FilterAst {
    const f = this.or(0);
    const t = this.peek();
    if (t.t !== 'end') throw this.err(t.at, 'expected AND, OR or the end of the expression');
    return f;
  }

  private or(depth: number): FilterAst {
    const parts = [this.and(depth)];
    while (this.keyword('OR')) parts.push(this.and(depth));
    return parts.length === 1 ? parts[0]! : { type: 'list', op: 'OR', filters: parts };
  }

  private and(depth: number): FilterAst {
    const parts = [this.unary(depth)];
    while (this.keyword('AND')) parts.push(this.unary(depth));
    return parts.length === 1 ? parts[0]! : { type: 'list', op: 'AND', filters: parts };
  }

  private unary(depth: number): FilterAst {
    if (depth > 32) throw this.err(this.peek().at, 'nested too deeply');
    if (this.keyword('SKIP')) return { type: 'skip', filter: this.unary(depth + 1) };
    if (this.keyword('WHILE')) return { type: 'while', filter: this.unary(depth + 1) };
    const t = this.peek();
    if (t.t === '(') {
      this.i++;
      const f = this.or(depth + 1);
      const c = this.peek();
      if (c.t !== ')') throw this.err(c.at, "expected ')'");
      this.i++;
      return f;
    }
    if (t.t !== 'name') throw this.err(t.at, 'expected a filter, such as PrefixFilter(...), or (');
    this.i++;
    if (++this.calls > FILTER_NODES_MAX) throw this.err(t.at, `more than ${FILTER_NODES_MAX} filters`);
    const open = this.peek();
    if (open.t !== '(') throw this.err(open.at, `expected '(' after ${t.v}`);
    this.i++;
    const args: Arg[] = [];
    if (this.peek().t !== ')') {
      for (;;) {
        const a = this.peek();
        if (a.t === 'name' && /^(true|false)$/i.test(a.v)) args.push({ ...a, v: a.v.toLowerCase() });
        else if (a.t === 'str' || a.t === 'num' || a.t === 'op') args.push(a);
        else throw this.err(a.at, `expected an argument of ${t.v}`);
        this.i++;
        const sep = this.peek();
        if (sep.t === ')') break;
        if (sep.t !== ',') throw this.err(sep.at, `expected ',' or ')' in ${t.v}(...)`);
        this.i++;
      }
    }
    const close = this.peek();
    this.i++;
    return buildFilter(t.v, args, close.at, (at, why) => this.err(at, why));
  }
}

type Fail = (at: number, why: string) => DbError;

/** Arguments of one filter call, read in order with type checks. */
class Args {
  private i = 0;
  constructor(
    private readonly name: string,
    private readonly args: Arg[],
    private readonly endAt: number,
    private readonly fail: Fail,
  ) {}
  get count(): number {
    return this.args.length;
  }
  private next(what: string): Arg {
    const a = this.args[this.i++];
    if (!a) throw this.fail(this.endAt, `${this.name} needs ${what} as argument ${this.i}`);
    return a;
  }
  str(what: string): string {
    const a = this.next(what);
    if (a.t !== 'str') throw this.fail(a.at, `${this.name}: argument ${this.i} (${what}) must be a quoted string`);
    return a.v;
  }
  literal(what: string): FilterLiteral {
    const a = this.next(what);
    if (a.t === 'str') return a.v;
    if (a.t === 'num') return a.v.includes('.') ? Number(a.v) : { int: a.v };
    throw this.fail(a.at, `${this.name}: argument ${this.i} (${what}) must be a string or a number`);
  }
  int(what: string): number {
    const a = this.next(what);
    if (a.t !== 'num' || !/^[0-9]+$/.test(a.v) || !Number.isSafeInteger(Number(a.v))) throw this.fail(a.at, `${this.name}: argument ${this.i} (${what}) must be an integer >= 0`);
    return Number(a.v);
  }
  bool(what: string): boolean {
    const a = this.next(what);
    if (a.t !== 'name') throw this.fail(a.at, `${this.name}: argument ${this.i} (${what}) must be true or false`);
    return a.v === 'true';
  }
  op(): CompareOp {
    const a = this.next('a comparison operator');
    if (a.t !== 'op') throw this.fail(a.at, `${this.name}: argument ${this.i} must be one of ${COMPARE_OPS.join(' ')}`);
    return a.v;
  }
  comparator(): Comparator {
    const a = this.next("a comparator ('binary:v', 'substring:v', ...)");
    if (a.t !== 'str') throw this.fail(a.at, `${this.name}: argument ${this.i} must be a quoted comparator such as 'binary:30'`);
    const c = a.v.indexOf(':');
    const kind = c < 0 ? '' : a.v.slice(0, c).toLowerCase();
    const v = a.v.slice(c + 1);
    if (kind === 'binary') return { type: 'binary', value: v };
    if (kind === 'binaryprefix') return { type: 'binaryprefix', value: v };
    if (kind === 'substring') return { type: 'substring', value: v };
    if (kind === 'regexstring' || kind === 'regex') return { type: 'regex', pattern: v };
    throw this.fail(a.at, `${this.name}: unknown comparator '${a.v.slice(0, 30)}' (binary:, binaryprefix:, substring:, regexstring:)`);
  }
  done(): void {
    const a = this.args[this.i];
    if (a) throw this.fail(a.at, `${this.name} takes ${this.i} argument${this.i === 1 ? '' : 's'}`);
  }
  at(): number {
    return this.args[0]?.at ?? this.endAt;
  }
  /** Is argument i (0-based) a quoted string? */
  isStr(i: number): boolean {
    return this.args[i]?.t === 'str';
  }
}

const FILTER_NAMES: Record<string, (a: Args) => FilterAst> = {
  prefixfilter: (a) => ({ type: 'prefix', prefix: a.literal('a row key prefix') }),
  rowrangefilter: (a) => ({ type: 'rowRange', ...rowRange(a) }),
  inclusivestopfilter: (a) => ({ type: 'rowRange', startInclusive: true, stop: a.literal('the last row key'), stopInclusive: true }),
  multirowrangefilter: (a) => {
    const ranges: RowRange[] = [];
    do ranges.push(rowRange(a));
    while (a.count > ranges.length * 4);
    return { type: 'multiRowRange', ranges };
  },
  fuzzyrowfilter: (a) => {
    const patterns = [a.str("a pattern ('?' = any byte)")];
    while (a.count > patterns.length) patterns.push(a.str('a pattern'));
    return { type: 'fuzzyRow', patterns };
  },
  columnprefixfilter: (a) => ({ type: 'columnPrefix', prefixes: [a.str('a column name prefix')] }),
  multiplecolumnprefixfilter: (a) => {
    const prefixes = [a.str('a column name prefix')];
    while (a.count > prefixes.length) prefixes.push(a.str('a column name prefix'));
    return { type: 'columnPrefix', prefixes };
  },
  columnrangefilter: (a) => {
    const min = a.str('the first column name');
    const minInclusive = a.bool('min inclusive');
    const max = a.str('the last column name');
    const maxInclusive = a.bool('max inclusive');
    return { type: 'columnRange', ...(min ? { min } : {}), minInclusive, ...(max ? { max } : {}), maxInclusive };
  },
  qualifierfilter: (a) => ({ type: 'qualifier', op: a.op(), comparator: a.comparator() }),
  valuefilter: (a) => ({ type: 'value', op: a.op(), comparator: a.comparator() }),
  singlecolumnvaluefilter: (a) => {
    // (column, op, cmp) | (family, column, op, cmp) | ... , filterIfMissing[, latestVersionOnly]
    const hasFamily = a.isStr(1);
    const first = a.str('a column family or column');
    const family = hasFamily ? first : undefined;
    const column = family !== undefined ? a.str('a column') : first;
    const op = a.op();
    const comparator = a.comparator();
    const filterIfMissing = a.count > (family !== undefined ? 4 : 3) ? a.bool('filterIfMissing') : false;
    if (a.count > (family !== undefined ? 5 : 4)) a.bool('latestVersionOnly');
    return { type: 'singleColumnValue', ...(family !== undefined ? { family } : {}), column, op, comparator, filterIfMissing };
  },
  keyonlyfilter: () => ({ type: 'keyOnly' }),
  firstkeyonlyfilter: () => ({ type: 'firstKeyOnly' }),
  pagefilter: (a) => ({ type: 'page', rows: a.int('a row count') }),
  columnpaginationfilter: (a) => ({ type: 'columnPagination', limit: a.int('a limit'), offset: a.int('an offset') }),
  timestampsfilter: (a) => {
    const ts = [String(a.int('a timestamp (microseconds)'))];
    while (a.count > ts.length) ts.push(String(a.int('a timestamp (microseconds)')));
    return { type: 'timestamps', timestamps: ts };
  },
};

function rowRange(a: Args): RowRange {
  const start = a.literal("a start row key ('' for the first row)");
  const startInclusive = a.bool('start inclusive');
  const stop = a.literal("a stop row key ('' for the last row)");
  const stopInclusive = a.bool('stop inclusive');
  return { ...(start !== '' ? { start } : {}), startInclusive, ...(stop !== '' ? { stop } : {}), stopInclusive };
}

function buildFilter(name: string, args: Arg[], endAt: number, fail: Fail): FilterAst {
  const make = FILTER_NAMES[name.toLowerCase()];
  if (!make) throw fail(args[0]?.at ?? endAt, `unknown filter ${name} (known: ${Object.keys(FILTER_NAMES).join(', ')})`);
  const a = new Args(name, args, endAt, fail);
  const f = make(a);
  a.done();
  try {
    // The same checks the tablet makes (an empty range list, a bad regex, a text comparator with <).
    return parseFilterJson(f);
  } catch (e) {
    throw fail(a.at(), `${name}: ${(e as Error).message.replace(/^bad filter at filter[^:]*: /, '')}`);
  }
}

/** Parse a filter expression (the CLI's --filter) into a filter tree. */
export function parseFilterExpression(src: string): FilterAst {
  if (src.length > FILTER_EXPRESSION_CHARS_MAX) throw expressionError(FILTER_EXPRESSION_CHARS_MAX, src, `longer than ${FILTER_EXPRESSION_CHARS_MAX} characters`);
  if (src.trim() === '') throw expressionError(0, src, 'empty filter expression');
  const f = new Parser(src, tokenize(src)).parse();
  return parseFilterJson(f);
}

/** A filter as a client gives it: an expression string, or a tree (checked as the tablet would). */
export function toFilterAst(f: string | FilterAst): FilterAst {
  return typeof f === 'string' ? parseFilterExpression(f) : parseFilterJson(f);
}
