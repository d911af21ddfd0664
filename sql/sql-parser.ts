/**
 * SQL text -> statements, with the real PostgreSQL parser (libpg-query: PostgreSQL's own grammar
 * compiled to WebAssembly, shipped inside the npm package). YugabyteDB adds two spellings to CREATE
 * TABLE that PostgreSQL's grammar does not have — `PRIMARY KEY ((a) HASH, b ASC)` and
 * `SPLIT INTO N TABLETS` — so they are taken out at the token level (PostgreSQL's own scanner) and
 * handed to the executor beside the statement, and the rest is parsed as PostgreSQL.
 */
import * as pg from 'libpg-query';
import type { Node, RawStmt } from 'libpg-query';
import { SqlError, SqlState } from './exec/sql-error';
import { ParseCache, scanLiterals, type TemplateRef } from './parse-cache';

export type { Node } from 'libpg-query';

/** YugabyteDB's CREATE TABLE extras, in the order of the CREATE TABLE statements of the text. */
export interface YbTableOptions {
  primaryKey?: { hash: string[]; range: Array<{ name: string; desc: boolean }> };
  splitTablets?: number;
  /** `SPLIT AT VALUES ((v1), (v2, 'x'))`: split points of a range table, leading range-column values (docs/splitting.md). */
  splitAt?: unknown[][];
}

export interface ParsedStatement {
  stmt: Node;
  /** The statement's own text (for EXPLAIN and logs). */
  sql: string;
  yb?: YbTableOptions;
  /** Set when the parse cache made it (sql/parse-cache.ts): the plan cache's key. */
  template?: TemplateRef;
}

/** Longest statement text accepted (PostgreSQL's limit is 1 GiB; past this one: 54000). */
export const STATEMENT_BYTES_MAX = 64 * 1024 * 1024;

let loaded: Promise<void> | undefined;

/** Load the WebAssembly parser once per process (the server awaits this before accepting connections). */
export function loadParser(): Promise<void> {
  loaded ??= pg.loadModule();
  return loaded;
}

interface Token {
  text: string;
  start: number;
  end: number;
}

function lower(t: Token | undefined): string {
  return t ? t.text.toLowerCase() : '';
}

/** Rewrite YugabyteDB's key and split clauses away; returns the PostgreSQL text and the options found. */
export function rewriteYugabyteSyntax(sql: string): { sql: string; options: YbTableOptions[] } {
  if (!/\bhash\b|\bsplit\b|\basc\b|\bdesc\b/i.test(sql) || !/\bcreate\b/i.test(sql)) return { sql, options: [] };
  let tokens: Token[];
  try {
    tokens = pg.scanSync(sql).tokens;
  } catch {
    return { sql, options: [] };
  }
  const edits: Array<{ start: number; end: number; text: string }> = [];
  const options: YbTableOptions[] = [];
  let cur: YbTableOptions | undefined;
  for (let i = 0; i < tokens.length; i++) {
    const t = lower(tokens[i]);
    if (t === 'create' && (lower(tokens[i + 1]) === 'table' || lower(tokens[i + 2]) === 'table')) {
      cur = {};
      options.push(cur);
    } else if (cur && t === 'primary' && lower(tokens[i + 1]) === 'key' && tokens[i + 2]?.text === '(') {
      const end = matchParen(tokens, i + 2);
      if (end < 0) continue;
      const pk = keyColumns(tokens.slice(i + 3, end));
      if (pk) {
        cur.primaryKey = pk;
        edits.push({ start: tokens[i + 2]!.start, end: tokens[end]!.end, text: `(${[...pk.hash, ...pk.range.map((r) => r.name)].map(quoteIdent).join(', ')})` });
      }
      i = end;
    } else if (cur && t === 'split' && lower(tokens[i + 1]) === 'into' && lower(tokens[i + 3]) === 'tablets') {
      cur.splitTablets = Number(tokens[i + 2]!.text);
      edits.push({ start: tokens[i]!.start, end: tokens[i + 3]!.end, text: '' });
      i += 3;
    } else if (cur && t === 'split' && lower(tokens[i + 1]) === 'at' && lower(tokens[i + 2]) === 'values' && tokens[i + 3]?.text === '(') {
      const end = matchParen(tokens, i + 3);
      const points = end < 0 ? undefined : splitTuples(tokens.slice(i + 4, end));
      if (!points) throw new SqlError(SqlState.SYNTAX_ERROR, 'SPLIT AT VALUES takes tuples of literals: SPLIT AT VALUES ((1), (100))');
      cur.splitAt = points;
      edits.push({ start: tokens[i]!.start, end: tokens[end]!.end, text: '' });
      i = end;
    }
  }
  let out = sql;
  for (const e of edits.reverse()) out = out.slice(0, e.start) + e.text + out.slice(e.end);
  return { sql: out, options };
}

/** `(1), (2, 'x')` → [[1], [2, 'x']]: numbers (with a leading minus) and string literals only. */
function splitTuples(items: Token[]): unknown[][] | undefined {
  const out: unknown[][] = [];
  let i = 0;
  while (i < items.length) {
    if (items[i]!.text !== '(') return undefined;
    const close = matchParen(items, i);
    if (close < 0) return undefined;
    const tuple: unknown[] = [];
    for (let j = i + 1; j < close; j++) {
      let text = items[j]!.text;
      if (text === ',') continue;
      if (text === '-' && j + 1 < close) text = `-${items[++j]!.text}`;
      if (/^'.*'$/s.test(text)) tuple.push(text.slice(1, -1).replace(/''/g, "'"));
      else if (/^-?[0-9]+$/.test(text)) tuple.push(BigInt(text));
      else if (/^-?[0-9]*\.[0-9]+(e-?[0-9]+)?$/i.test(text)) tuple.push(Number(text));
      else return undefined;
    }
    if (tuple.length === 0) return undefined;
    out.push(tuple);
    i = close + 1;
    if (items[i]?.text === ',') i++;
  }
  return out.length > 0 ? out : undefined;
}

function matchParen(tokens: Token[], open: number): number {
  let depth = 0;
  for (let j = open; j < tokens.length; j++) {
    if (tokens[j]!.text === '(') depth++;
    else if (tokens[j]!.text === ')' && --depth === 0) return j;
  }
  return -1;
}

function unquote(s: string): string {
  return s.startsWith('"') ? s.slice(1, -1).replace(/""/g, '"') : s.toLowerCase();
}

function quoteIdent(s: string): string {
  return /^[a-z_][a-z0-9_$]*$/.test(s) ? s : `"${s.replace(/"/g, '""')}"`;
}

/** Items of a PRIMARY KEY list: `(a, b) HASH`, `a HASH`, `b ASC|DESC`, `c`. Undefined: plain PostgreSQL. */
function keyColumns(items: Token[]): YbTableOptions['primaryKey'] | undefined {
  const hash: string[] = [];
  const range: Array<{ name: string; desc: boolean }> = [];
  let yb = false;
  let i = 0;
  while (i < items.length) {
    let names: string[] = [];
    if (items[i]!.text === '(') {
      const close = items.findIndex((t, j) => j > i && t.text === ')');
      if (close < 0) return undefined;
      names = items.slice(i + 1, close).filter((t) => t.text !== ',').map((t) => unquote(t.text));
      i = close + 1;
      yb = true;
    } else names = [unquote(items[i++]!.text)];
    const mod = lower(items[i]);
    if (mod === 'hash' || mod === 'asc' || mod === 'desc') {
      yb = true;
      i++;
    }
    if (mod === 'hash' || (names.length > 1 && mod !== 'asc' && mod !== 'desc')) hash.push(...names);
    else range.push(...names.map((name) => ({ name, desc: mod === 'desc' })));
    if (items[i]?.text === ',') i++;
    else if (i < items.length) return undefined;
  }
  return yb ? { hash, range } : undefined;
}

/** Templates of statements that differ only in integer literals (sql/parse-cache.ts), for the process. */
export const parseCache = new ParseCache();

/**
 * Parse a query string into statements; a syntax error is 42601 with the 1-based character position.
 * `useCache`: through the parse cache (--ysql_parse_cache).
 */
export function parseSql(sql: string, useCache = true): ParsedStatement[] {
  if (Buffer.byteLength(sql) > STATEMENT_BYTES_MAX) throw new SqlError(SqlState.PROGRAM_LIMIT, `statement is too large: ${Buffer.byteLength(sql)} bytes (at most ${STATEMENT_BYTES_MAX})`);
  const scan = useCache ? scanLiterals(sql) : undefined;
  const cached = scan ? parseCache.lookup(sql, scan) : undefined;
  if (cached) return cached;
  const rw = rewriteYugabyteSyntax(sql);
  let stmts: RawStmt[];
  try {
    stmts = pg.parseSync(rw.sql).stmts ?? [];
  } catch (e) {
    const d = (e as { sqlDetails?: { cursorPosition?: number } }).sqlDetails;
    const msg = e instanceof Error ? e.message : String(e);
    throw new SqlError(SqlState.SYNTAX_ERROR, msg, d?.cursorPosition !== undefined ? { position: d.cursorPosition + 1 } : {});
  }
  let creates = 0;
  const parsed = stmts.map((s) => {
    const start = s.stmt_location ?? 0;
    const end = s.stmt_len ? start + s.stmt_len : rw.sql.length;
    const stmt = s.stmt!;
    const yb = 'CreateStmt' in stmt ? rw.options[creates++] : undefined;
    return { stmt, start, end, yb };
  });
  if (scan && rw.sql === sql) parseCache.remember(scan, parsed.map((p) => ({ ...p, yb: p.yb !== undefined })));
  return parsed.map((p) => ({ stmt: p.stmt, sql: rw.sql.slice(p.start, p.end).trim(), ...(p.yb ? { yb: p.yb } : {}) }));
}
