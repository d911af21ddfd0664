/**
 * What a compiled expression sees: the columns of the rows it is evaluated on (a flat array per row:
 * the FROM items' columns side by side), the statement's parameters, and the session.
 */
import type { SqlTypeName, SqlValue } from './sql-types';

export interface ScopeColumn {
  /** The FROM item's name or alias ('' for an unnamed one). */
  rel: string;
  name: string;
  type: SqlTypeName;
  /** Hidden columns (the row id of a table without primary key) are not part of `*`. */
  hidden?: boolean;
  /** A JOIN USING side's copy of a joined column: found by `table.column` only (the joined column answers to the bare name). */
  qualifiedOnly?: boolean;
  /** A primary key column of its table (GROUP BY of the whole key makes its other columns groupable). */
  key?: boolean;
}

export type Tuple = SqlValue[];

export class Scope {
  constructor(
    readonly columns: ScopeColumn[],
    /** The enclosing query's scope, for correlated subqueries. */
    readonly outer?: Scope,
  ) {}

  /** Index of a column by (optional relation) name; -1 if absent, throws on ambiguity. */
  find(rel: string | undefined, name: string): number[] {
    const out: number[] = [];
    this.columns.forEach((c, i) => {
      if (c.name === name && (rel === undefined ? !c.qualifiedOnly : c.rel === rel)) out.push(i);
    });
    return out;
  }
}

/** Session facts expressions read (now(), current_user, sequences). */
export interface SessionInfo {
  user: string;
  database: string;
  /** The statement's start time (now() is stable within a statement... and a transaction, in PostgreSQL). */
  now: Date;
  pid: number;
  settings: Map<string, string>;
  extensions: Set<string>;
}

export interface EvalContext {
  params: SqlValue[];
  session: SessionInfo;
  /** Rows of the enclosing queries, innermost last (correlated subqueries read them). */
  outerRows: Tuple[];
  /** Sequence values resolved before the statement ran (nextval is async; see dml.ts). */
  nextval: (sequence: string) => bigint;
  /** pg_sleep's total for the statement (functions-extra.ts): the session waits it out before answering. */
  sleep?: { ms: number };
  /** currval(name) / lastval() (name undefined): this session's latest nextval (sequence-ddl.ts). */
  currval?: (sequence: string | undefined) => bigint;
  /** setval(name, value): written when the statement has run. */
  setval?: (sequence: string, value: bigint) => void;
}

export interface Compiled {
  type: SqlTypeName;
  /** The output column name PostgreSQL would give this expression. */
  name: string;
  eval: (row: Tuple, ctx: EvalContext) => SqlValue;
  /** An array's element type, where known (its value is the text form): subscripts and unnest give that type. */
  elementType?: SqlTypeName;
}
