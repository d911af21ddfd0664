/**
 * CREATE SEQUENCE / DROP SEQUENCE and the sequence functions of a statement (docs/sql.md, "DDL"):
 * nextval, currval, lastval, setval over `sequences.ts`'s cached ranges. nextval is synchronous in
 * the executor, so a statement's sequences are filled before it runs (`prepareSequences`), with at
 * least ysql_sequence_cache_minval values each; setval writes after the statement.
 */
import type { Node } from '../sql-parser';
import { DbError, ErrorCode } from '../../common/errors';
import { baseName, names } from './ast';
import type { SequenceCache } from './sequences';
import { notSupported, SqlError, SqlState } from './sql-error';

type CreateSeqStmt = Extract<Node, { CreateSeqStmt: unknown }>['CreateSeqStmt'];

function optionInt(arg: Node | undefined): bigint | undefined {
  if (!arg) return undefined;
  if ('Integer' in arg) return BigInt(arg.Integer.ival ?? 0);
  if ('Float' in arg && /^-?\d+$/.test(arg.Float.fval ?? '')) return BigInt(arg.Float.fval!);
  return undefined;
}

export async function createSequence(s: CreateSeqStmt, seqs: SequenceCache): Promise<{ notice?: string }> {
  const name = s.sequence?.relname ?? '';
  let start = 1n;
  for (const o of s.options ?? []) {
    if (!('DefElem' in o)) continue;
    const d = o.DefElem;
    const v = optionInt(d.arg);
    if (d.defname === 'start') start = v ?? 1n;
    else if (d.defname === 'increment' && v !== 1n) throw notSupported('INCREMENT other than 1');
    else if (d.defname === 'cycle' && d.arg && 'Boolean' in d.arg && d.arg.Boolean.boolval === true) throw notSupported('CYCLE');
    else if (!['increment', 'cache', 'minvalue', 'maxvalue', 'cycle', 'as', 'owned_by'].includes(d.defname ?? '')) throw notSupported(`sequence option ${d.defname ?? ''}`);
  }
  if (await seqs.exists(name)) {
    if (s.if_not_exists) return { notice: `relation "${name}" already exists, skipping` };
    throw new SqlError(SqlState.DUPLICATE_TABLE, `relation "${name}" already exists`);
  }
  await seqs.create(name, start);
  return {};
}

export async function dropSequences(objects: Node[], missingOk: boolean, seqs: SequenceCache): Promise<string[]> {
  const notices: string[] = [];
  for (const o of objects) {
    const p = 'List' in o ? names(o.List.items) : [];
    const name = p[p.length - 1] ?? '';
    if (!(await seqs.exists(name))) {
      if (!missingOk) throw new SqlError(SqlState.UNDEFINED_TABLE, `sequence "${name}" does not exist`);
      notices.push(`sequence "${name}" does not exist, skipping`);
      continue;
    }
    await seqs.drop(name);
  }
  return notices;
}

/** The sequences a statement's nextval('name') calls name (a literal name; anything else is 0A000 when it runs out). */
export function nextvalNames(stmt: Node): string[] {
  const out = new Set<string>();
  const walk = (n: unknown): void => {
    if (Array.isArray(n)) { n.forEach(walk); return; }
    if (n === null || typeof n !== 'object') return;
    const f = (n as { FuncCall?: { funcname?: Node[]; args?: Node[] } }).FuncCall;
    if (f && baseName(f.funcname) === 'nextval') {
      const a = f.args?.[0];
      const lit = a && 'A_Const' in a ? a.A_Const.sval?.sval : a && 'TypeCast' in a && a.TypeCast.arg && 'A_Const' in a.TypeCast.arg ? a.TypeCast.arg.A_Const.sval?.sval : undefined;
      if (lit) out.add(lit);
    }
    for (const v of Object.values(n)) walk(v);
  };
  walk(stmt);
  return [...out];
}

/** Fills the named sequences' caches (`n` values each, at least) before a statement runs; an unknown one is 42P01. */
export async function prepareSequences(stmt: Node, seqs: SequenceCache, n = 1): Promise<void> {
  for (const name of nextvalNames(stmt)) {
    try {
      await seqs.ensureCached(name, n);
    } catch (e) {
      if (e instanceof DbError && e.code === ErrorCode.NOT_FOUND) throw new SqlError(SqlState.UNDEFINED_TABLE, `relation "${name}" does not exist`);
      throw e;
    }
  }
}

/** A session's sequence functions: nextval from the server's cache, currval/lastval, setval after the statement. */
export class SessionSequences {
  /** The latest nextval per sequence ('': of any sequence, for lastval). */
  private readonly last = new Map<string, bigint>();
  private pending: Array<[string, bigint]> = [];

  constructor(private readonly seqs: () => SequenceCache) {}

  nextval(name: string): bigint {
    const v = this.seqs().takeCached(name);
    if (v === undefined) throw notSupported(`more nextval('${name}') calls in one statement than this server's cache of the sequence holds (ysql_sequence_cache_minval)`);
    this.last.set(name, v).set('', v);
    return v;
  }

  currval(name: string | undefined): bigint {
    const v = this.last.get(name ?? '');
    if (v === undefined) throw new SqlError(SqlState.OBJECT_NOT_IN_PREREQUISITE_STATE, name === undefined ? 'lastval is not yet defined in this session' : `currval of sequence "${name}" is not yet defined in this session`);
    return v;
  }

  /** A statement begins: setval calls of a failed one are forgotten. */
  startStatement(): void {
    this.pending = [];
  }

  setLater(name: string, last: bigint): void {
    this.pending.push([name, last]);
  }

  /** The statement's setval calls, in order; an unknown sequence is 42P01. */
  async applySetvals(): Promise<void> {
    const calls = this.pending;
    this.pending = [];
    for (const [name, last] of calls) {
      try {
        await this.seqs().setval(name, last);
      } catch (e) {
        if (e instanceof DbError && e.code === ErrorCode.NOT_FOUND) throw new SqlError(SqlState.UNDEFINED_TABLE, `relation "${name}" does not exist`);
        throw e;
      }
    }
  }
}
