/**
 * One SQL connection's executor: transaction state and statement dispatch. A statement inside
 * BEGIN … COMMIT runs in the session's distributed transaction (client/transaction.ts); outside, a
 * single-row INSERT is a plain write and any other writing statement runs in a transaction of its
 * own (committed at its end), so it is atomic as in PostgreSQL.
 */
import type { Table, TesseraClient, Transaction } from '../../client';
import type { Flags } from '../../common/flags';
import type { Node, ParsedStatement } from '../sql-parser';
import { YSQL_BLOCK_KEEPS_WRITES, YSQL_ENABLE_AGGREGATE_PUSHDOWN, YSQL_ENABLE_EXPRESSION_PUSHDOWN, YSQL_PARSE_CACHE, YSQL_PLAN_CACHE, YSQL_ROWS_MAX } from '../sql-flags';
import { cachedPointPlan, rememberPointPlan, runPointPlan } from './plan-cache';
import { dmlRelation, explainAnalyze, hasReturning, isSingleRowValues, names, needsTransaction, returningOf } from './ast';
import type { SqlCatalog, SqlTableDef } from './catalog';
import { createTable, dropTables, truncateTable, type DdlDeps } from './ddl';
import { alterTable, renameObject } from './alter-table';
import { insertRows, updateOrDelete, type DmlDeps, type DmlResult } from './dml';
import type { CompileEnv } from './expr';
import { preload, columnsOf } from './preload';
import { Scope, type EvalContext, type SessionInfo, type Tuple } from './scope';
import { compileEnv, compileSelect, withCtes, type LoadedRelation, type OutputField, type PlanEnv } from './select';
import type { SequenceCache } from './sequences';
import { notSupported, SqlError, SqlState } from './sql-error';
import { typeOfValue, type SqlTypeName, type SqlValue } from './sql-types';
import { chooseAccess, describePath, readRows, SCAN_TIMEOUT_MS } from './access';
import { describePushdown, pushdownPlan, runPushdown } from './pushdown';
import { describeFilter, tabletFilter } from './where-pushdown';
import { createIndex } from './index-build';
import { dropIndexes } from './indexes';
import { Savepoints } from './savepoints';
import { OwnRows } from './own-rows';
import { BulkLoads } from './bulk-load';
import { copyStatement, type CopyIn, type CopyOut } from './copy';
import { SqlPrepared } from './sql-prepare';
import { createTableAs } from './create-table-as';
import { lockReadRows, lockTargets } from './for-update';
import { createView, dropViews, expandViews } from './views';
import { createSequence, dropSequences, prepareSequences, SessionSequences } from './sequence-ddl';
import { defaultSettings, readTimeOf, showAll, showVariable, setVariable } from './settings';

export interface SessionDeps {
  client: TesseraClient;
  catalog: SqlCatalog;
  sequences: SequenceCache;
  flags: Flags;
  /** Extensions created in the database (shared by the server's sessions). */
  extensions: Set<string>;
  saveExtension: (name: string) => Promise<void>;
}

/** EXECUTE's arguments are constants: a subquery among them is 0A000. */
const NO_SUBQUERY_ENV: CompileEnv = { paramTypes: [], subquery: () => { throw notSupported('a subquery as an EXECUTE argument'); } };

export interface StatementResult {
  tag: string;
  fields?: OutputField[];
  /** `fields` is a kept plan's own list, the same array every run (plan-cache.ts): its RowDescription may be encoded once. */
  fieldsKept?: true;
  rows?: Tuple[];
  notices?: string[];
  copyIn?: CopyIn;
  copyOut?: CopyOut;
}

export type TxnStatus = 'I' | 'T' | 'E';

export class SqlSession {
  private txn: Transaction | undefined;
  /**
   * Inside BEGIN … COMMIT. The distributed transaction itself begins with the block's first statement
   * that reads or writes a table (as PostgreSQL takes its snapshot at the first statement): a block
   * that only runs DDL or COPY (pgbench -i) holds no transaction, and BEGIN costs no round trip.
   */
  private inBlock = false;
  private blockIsolation: 'snapshot' | 'serializable' = 'snapshot';
  private txnFailed = false;
  private isolation: 'snapshot' | 'serializable' = 'snapshot';
  /** COPY FROM into tables this block created or truncated: emptied again unless the block commits (bulk-load.ts). */
  private readonly bulk = new BulkLoads();
  readonly info: SessionInfo;

  constructor(private readonly deps: SessionDeps, user: string, database: string, pid: number) {
    this.info = { user, database, now: new Date(), pid, settings: defaultSettings(user), extensions: deps.extensions };
  }

  /** Set by a CancelRequest; a statement that notices it before committing its own transaction aborts it. */
  private cancelled = false;

  /**
   * The client cancelled the running statement (it has already been answered 57014): a transaction
   * block is failed (COMMIT will roll back), and a statement's own transaction will not commit.
   */
  cancel(): void {
    this.cancelled = true;
    if (this.inBlock) this.txnFailed = true;
  }

  status(): TxnStatus {
    return this.txnFailed ? 'E' : this.inBlock ? 'T' : 'I';
  }

  /** WHERE on the tablets: the flag, unless the session turned it off (`SET yb_enable_expression_pushdown = off`). */
  private pushFilters(): boolean {
    return this.deps.flags.get(YSQL_ENABLE_EXPRESSION_PUSHDOWN) && !/^(off|false|0|no)$/i.test(this.info.settings.get('yb_enable_expression_pushdown') ?? 'on');
  }

  /** Whether statement texts go through the parse cache (--ysql_parse_cache, runtime). */
  get parseCacheOn(): boolean {
    return this.deps.flags.get(YSQL_PARSE_CACHE);
  }

  /** Point SELECTs planned once per template (--ysql_plan_cache, runtime); never with yb_read_time (planned as always). */
  private planCacheOn(): boolean {
    return this.deps.flags.get(YSQL_PLAN_CACHE) && readTimeOf(this.info) === undefined;
  }

  private rowsMax(): number {
    return this.deps.flags.get(YSQL_ROWS_MAX);
  }

  private tableFor(txn: Transaction | undefined): (name: string) => Table {
    // The block's transaction: rows it read whole are answered again from what it knows (own-rows.ts);
    // with a savepoint set, writes record what they overwrite (savepoints.ts).
    if (txn && txn === this.txn) {
      const keeps = this.blockKeeps;
      return (name) => {
        const t = this.savepoints.active ? this.savepoints.wrap(txn.table(name)) : txn.table(name);
        return keeps ? this.ownRows.wrap(t) : t;
      };
    }
    return (name) => (txn ? txn.table(name) : this.deps.client.table(name));
  }

  /** Rows the block's transaction knows (cleared whenever the block ends or may have changed them unseen). */
  private readonly ownRows = new OwnRows();
  /** Whether the current block's transaction keeps writes back (--ysql_block_keeps_writes when it began). */
  private blockKeeps = false;

  private readonly savepoints = new Savepoints({
    columnsOf: async (table) => {
      const s = (await this.deps.client.tableLocations(table)).schema;
      return { key: [...s.hash, ...s.range].map((c) => c.name), all: s.columns.map((c) => c.name) };
    },
  });

  /** nextval / currval / setval of this session (sequence-ddl.ts). */
  private readonly seqs = new SessionSequences(() => this.deps.sequences);

  /** PREPARE'd statements of this session (sql-prepare.ts). */
  private readonly prepared = new SqlPrepared();

  /** pg_sleep's wait for the running statement (functions-extra.ts), waited out after it ran. */
  private stmtSleep = { ms: 0 };

  private context(params: SqlValue[]): EvalContext {
    return {
      params,
      session: this.info,
      outerRows: [],
      sleep: this.stmtSleep,
      nextval: (seq) => this.seqs.nextval(seq),
      currval: (seq) => this.seqs.currval(seq),
      setval: (seq, value) => this.seqs.setLater(seq, value),
    };
  }

  /** Changes whenever this server's catalog cache drops a definition (local DDL): cached descriptions are stale then. */
  catalogGeneration(): number {
    return this.deps.catalog.currentGeneration;
  }

  /** Output columns of a statement without running it (Describe). */
  async describe(ps: ParsedStatement, paramTypes: SqlTypeName[]): Promise<OutputField[] | undefined> {
    const s = await expandViews(ps.stmt, this.deps.catalog);
    const explain = 'ExplainStmt' in s;
    if (explain) return [{ name: 'QUERY PLAN', type: 'text', tableOid: 0, attnum: 0 }];
    if ('VariableShowStmt' in s) return [{ name: s.VariableShowStmt.name ?? '', type: 'text', tableOid: 0, attnum: 0 }];
    if ('ExecuteStmt' in s) { const b = this.prepared.bind(s.ExecuteStmt, NO_SUBQUERY_ENV, this.context([])); return this.describe(b.ps, b.types); }
    if (!('SelectStmt' in s) && !hasReturning(s)) return undefined;
    const ctx = this.context(paramTypes.map(() => null));
    const env: CompileEnv = { paramTypes, subquery: () => { throw new Error('unreachable'); } };
    const pre = await preload(s, { catalog: this.deps.catalog, table: this.tableFor(this.txn), env, ctx, rowsMax: this.rowsMax() }, true);
    const planEnv = this.planEnv(paramTypes, pre.relations);
    if ('SelectStmt' in s) return compileSelect(s.SelectStmt, planEnv).fields;
    const rel = dmlRelation(s);
    const def = await this.deps.catalog.require(rel.relname ?? '');
    const ret = returningOf(s)!;
    return compileSelect({ targetList: ret, fromClause: [], limitOption: 'LIMIT_OPTION_DEFAULT', op: 'SETOP_NONE' }, planEnv, new Scope(columnsOf(def, def.name))).fields;
  }

  private planEnv(paramTypes: SqlTypeName[], relations: Map<object, LoadedRelation>): PlanEnv {
    return {
      paramTypes,
      rowsMax: this.rowsMax(),
      relation: (rv) => {
        const r = relations.get(rv);
        if (!r) throw new SqlError(SqlState.INTERNAL, 'a table reference was not read before the statement ran');
        return r;
      },
    };
  }

  async execute(ps: ParsedStatement, params: SqlValue[], paramTypes: SqlTypeName[] = params.map((p) => (p === null ? 'unknown' : typeOfValue(p) === 'text' ? 'unknown' : typeOfValue(p)))): Promise<StatementResult> {
    // EXECUTE name(args) runs the prepared statement as if sent itself (sql-prepare.ts).
    if ('ExecuteStmt' in ps.stmt && !this.txnFailed) { const b = this.prepared.bind(ps.stmt.ExecuteStmt, NO_SUBQUERY_ENV, this.context([])); return this.execute(b.ps, b.params, b.types); }
    // A point SELECT of a template with a kept plan (plan-cache.ts) runs without its tree: a SELECT, so
    // no TransactionStmt, DML, and it needs the block's transaction.
    const planned = ps.template && this.planCacheOn() ? await cachedPointPlan(ps.template, this.deps.catalog, this.rowsMax(), paramTypes) : undefined;
    // Views in FROM become their queries (views.ts); a kept plan reads a table, never a view.
    if (!planned) { const st = await expandViews(ps.stmt, this.deps.catalog); if (st !== ps.stmt) ps = { stmt: st, sql: ps.sql }; }
    const s = planned ? undefined : ps.stmt;
    if (s && 'TransactionStmt' in s) return this.transactionStmt(s.TransactionStmt);
    if (this.txnFailed) throw new SqlError(SqlState.IN_FAILED_TXN, 'current transaction is aborted, commands ignored until end of transaction block');
    this.info.now = this.inBlock ? this.info.now : new Date();
    this.cancelled = false;
    try {
      // DDL and COPY change rows behind the block's table handles: what it knew of them is dropped.
      if (s && !isDml(s)) this.ownRows.clear();
      // The block keeps its upserts and deletes back to the COMMIT (docs/sql.md "Transactions"): they
      // leave together, in parallel across tablets, and a block whose writes fall in one tablet commits
      // by the single-tablet fast path. INSERTs are sent at once (their duplicate key is the statement's error).
      if (this.inBlock && !this.txn && (!s || needsTransaction(s))) {
        this.blockKeeps = this.deps.flags.get(YSQL_BLOCK_KEEPS_WRITES);
        this.txn = await this.deps.client.beginTransaction({ isolation: this.blockIsolation, deferWrites: this.blockKeeps });
      }
      const r0 = planned ? await runPointPlan(planned, ps.template!.values, this.tableFor(this.txn), this.context(params)) : undefined;
      if (r0) return { tag: `SELECT ${r0.rows.length}`, fields: r0.fields, fieldsKept: true, rows: r0.rows };
      this.stmtSleep = { ms: 0 };
      this.seqs.startStatement();
      if (/nextval/i.test(ps.sql)) await prepareSequences(ps.stmt, this.deps.sequences);
      const r = await this.dispatch(ps, params, paramTypes);
      await this.seqs.applySetvals();
      if (this.stmtSleep.ms > 0) await this.sleepOut(this.stmtSleep.ms);
      if (ps.template && 'SelectStmt' in ps.stmt && this.planCacheOn()) await rememberPointPlan(ps.template, this.deps.catalog, this.rowsMax(), paramTypes);
      return r;
    } catch (e) {
      if (this.inBlock) this.txnFailed = true;
      throw e;
    }
  }

  private async dispatch(ps: ParsedStatement, params: SqlValue[], paramTypes: SqlTypeName[]): Promise<StatementResult> {
    const s = ps.stmt;
    const ddl: DdlDeps = { client: this.deps.client, catalog: this.deps.catalog, sequences: this.deps.sequences };
    if ('SelectStmt' in s) {
      if (s.SelectStmt.intoClause) throw notSupported('SELECT INTO');
      return this.query(s, params, paramTypes);
    }
    if ('InsertStmt' in s || 'UpdateStmt' in s || 'DeleteStmt' in s) return this.dml(s, params, paramTypes);
    if ('CreateStmt' in s) {
      const r = await createTable(s.CreateStmt, ps.yb, ddl);
      if (this.inBlock && !r.notice) this.bulk.emptiedInBlock(s.CreateStmt.relation?.relname ?? '');
      return { tag: 'CREATE TABLE', ...(r.notice ? { notices: [r.notice] } : {}) };
    }
    if ('IndexStmt' in s) {
      const r = await createIndex(s.IndexStmt, ddl);
      return { tag: 'CREATE INDEX', ...(r.notice ? { notices: [r.notice] } : {}) };
    }
    if ('DropStmt' in s && s.DropStmt.removeType === 'OBJECT_INDEX') {
      const d = s.DropStmt;
      const objs = (d.objects ?? []).map((o) => { const p = 'List' in o ? names(o.List.items) : []; return p[p.length - 1] ?? ''; });
      return { tag: 'DROP INDEX', notices: await dropIndexes(objs, d.missing_ok === true, ddl) };
    }
    if ('DropStmt' in s && s.DropStmt.removeType !== 'OBJECT_SEQUENCE' && s.DropStmt.removeType !== 'OBJECT_VIEW') {
      const d = s.DropStmt;
      if (d.removeType !== 'OBJECT_TABLE') throw notSupported(`DROP ${(d.removeType ?? '').replace('OBJECT_', '')}`);
      const objs = (d.objects ?? []).map((o) => { const p = 'List' in o ? names(o.List.items) : []; return p[p.length - 1] ?? ''; });
      for (const o of objs) this.bulk.dropped(o);
      return { tag: 'DROP TABLE', notices: await dropTables(objs, d.missing_ok === true, ddl) };
    }
    if ('TruncateStmt' in s) {
      for (const r of s.TruncateStmt.relations ?? []) {
        if (!('RangeVar' in r)) continue;
        await truncateTable(r.RangeVar.relname ?? '', ddl);
        if (this.inBlock) this.bulk.emptiedInBlock(r.RangeVar.relname ?? '');
      }
      return { tag: 'TRUNCATE TABLE' };
    }
    if ('AlterTableStmt' in s) return { tag: 'ALTER TABLE', notices: await alterTable(s.AlterTableStmt, ddl, this.context([])) };
    if ('RenameStmt' in s) return { tag: 'ALTER TABLE', notices: await renameObject(s.RenameStmt, ddl) };
    if ('CreateExtensionStmt' in s) {
      const name = s.CreateExtensionStmt.extname ?? '';
      if (!['orafce', 'pgcrypto', 'plpgsql'].includes(name)) throw notSupported(`extension "${name}" (tessera provides orafce's dbms_random and pgcrypto's gen_random_bytes)`);
      if (this.deps.extensions.has(name)) {
        if (s.CreateExtensionStmt.if_not_exists) return { tag: 'CREATE EXTENSION', notices: [`extension "${name}" already exists, skipping`] };
        throw new SqlError(SqlState.DUPLICATE_OBJECT, `extension "${name}" already exists`);
      }
      await this.deps.saveExtension(name);
      return { tag: 'CREATE EXTENSION' };
    }
    if ('VacuumStmt' in s) return { tag: s.VacuumStmt.is_vacuumcmd ? 'VACUUM' : 'ANALYZE', notices: [`${s.VacuumStmt.is_vacuumcmd ? 'VACUUM' : 'ANALYZE'} does nothing in tessera: DocDB compacts and collects history on its own`] };
    if ('VariableSetStmt' in s) {
      const st = s.VariableSetStmt;
      if (st.name === 'TRANSACTION' || st.name === 'SESSION CHARACTERISTICS') return { tag: 'SET' };
      setVariable(this.info, st);
      return { tag: st.kind === 'VAR_RESET' || st.kind === 'VAR_RESET_ALL' ? 'RESET' : 'SET' };
    }
    if ('VariableShowStmt' in s) {
      const name = s.VariableShowStmt.name ?? '';
      if (name.toLowerCase() === 'all') return { tag: 'SHOW', fields: ['name', 'setting', 'description'].map((n) => ({ name: n, type: 'text' as const, tableOid: 0, attnum: 0 })), rows: showAll(this.info) };
      return { tag: 'SHOW', fields: [{ name, type: 'text', tableOid: 0, attnum: 0 }], rows: [[showVariable(this.info, name)]] };
    }
    if ('ExplainStmt' in s) return this.explain(s.ExplainStmt.query!, params, paramTypes, explainAnalyze(s.ExplainStmt.options));
    // COPY FROM writes batches as plain writes, outside the session's transaction (YugabyteDB's COPY also
    // commits every ROWS_PER_TRANSACTION rows on its own): a bulk load is not held as intents.
    if ('CopyStmt' in s && s.CopyStmt.is_from && this.inBlock) this.bulk.copyInto(s.CopyStmt.relation?.relname ?? '');
    if ('CopyStmt' in s) return copyStatement(s.CopyStmt, { catalog: this.deps.catalog, table: this.tableFor(s.CopyStmt.is_from ? undefined : this.txn), rowsMax: this.rowsMax(), takeSequence: (n, k) => this.deps.sequences.take(n, k), checks: { env: { paramTypes: [], subquery: () => { throw notSupported('subqueries in CHECK constraints'); } }, ctx: this.context([]) } });
    return this.otherStatement(ps, ddl);
  }

  /** PREPARE, DEALLOCATE, DISCARD, CREATE TABLE AS and statements accepted without effect; else 0A000. */
  private async otherStatement(ps: ParsedStatement, ddl: DdlDeps): Promise<StatementResult> {
    const s = ps.stmt;
    if ('PrepareStmt' in s) { this.prepared.prepare(s.PrepareStmt, ps.sql); return { tag: 'PREPARE' }; }
    if ('CreateSeqStmt' in s) { const r = await createSequence(s.CreateSeqStmt, this.deps.sequences); return { tag: 'CREATE SEQUENCE', ...(r.notice ? { notices: [r.notice] } : {}) }; }
    if ('DropStmt' in s && s.DropStmt.removeType === 'OBJECT_VIEW') return { tag: 'DROP VIEW', notices: await dropViews(s.DropStmt.objects ?? [], s.DropStmt.missing_ok === true, this.deps.catalog) };
    if ('DropStmt' in s) return { tag: 'DROP SEQUENCE', notices: await dropSequences(s.DropStmt.objects ?? [], s.DropStmt.missing_ok === true, this.deps.sequences) };
    if ('ViewStmt' in s) { await createView(s.ViewStmt, ps.sql, { catalog: this.deps.catalog, describe: async (q) => (await this.describe({ stmt: q, sql: '' }, [])) ?? [] }); return { tag: 'CREATE VIEW' }; }
    if ('DeallocateStmt' in s) { this.prepared.deallocate(s.DeallocateStmt); return { tag: 'DEALLOCATE' }; }
    if ('DiscardStmt' in s) this.prepared.deallocate({ isall: true });
    if ('CreateTableAsStmt' in s) return createTableAs(s.CreateTableAsStmt, ps.sql, { describe: (q) => this.describe(q, []), createTable: (c) => createTable(c.CreateStmt, undefined, ddl), insert: (i) => this.dml(i, [], []) });
    if ('DiscardStmt' in s || 'ListenStmt' in s || 'CheckPointStmt' in s) return { tag: Object.keys(s)[0]!.replace('Stmt', '').toUpperCase() };
    throw notSupported(`the statement ${Object.keys(s)[0]!.replace('Stmt', '')}`);
  }

  private async query(s: Node, params: SqlValue[], paramTypes: SqlTypeName[]): Promise<StatementResult> {
    const ctx = this.context(params);
    const env: CompileEnv = { paramTypes, subquery: () => { throw new Error('unreachable'); } };
    // yb_read_time: every table as of that time, outside the block's transaction (which reads the present).
    const readHt = readTimeOf(this.info);
    const table = readHt !== undefined ? this.tableFor(undefined) : this.tableFor(this.txn);
    const pushed = this.deps.flags.get(YSQL_ENABLE_AGGREGATE_PUSHDOWN) ? await pushdownPlan((s as Extract<Node, { SelectStmt: unknown }>).SelectStmt, this.deps.catalog, this.pushFilters() ? { env, ctx } : undefined) : undefined;
    if (pushed) s = { SelectStmt: await runPushdown((s as Extract<Node, { SelectStmt: unknown }>).SelectStmt, pushed, table(pushed.def.name), { timeoutMs: SCAN_TIMEOUT_MS, ...(readHt !== undefined ? { readHt } : {}) }) };
    const pre = await preload(s, { catalog: this.deps.catalog, table, env, ctx, rowsMax: this.rowsMax(), pushFilters: this.pushFilters(), ...(readHt !== undefined ? { readHt } : {}) });
    const lockOf = lockTargets((s as Extract<Node, { SelectStmt: unknown }>).SelectStmt);
    if (lockOf !== false && readHt !== undefined) throw new SqlError(SqlState.READ_ONLY_SQL_TXN, 'cannot execute SELECT FOR UPDATE while yb_read_time is set');
    if (lockOf !== false && this.inBlock && this.txn) await lockReadRows((s as Extract<Node, { SelectStmt: unknown }>).SelectStmt, lockOf, pre.relations, this.deps.catalog, table);
    const plan = compileSelect((s as Extract<Node, { SelectStmt: unknown }>).SelectStmt, this.planEnv(paramTypes, pre.relations));
    const rows = plan.runAsync ? await plan.runAsync(ctx) : plan.run(ctx);
    return { tag: `SELECT ${rows.length}`, fields: plan.fields, rows };
  }

  /** pg_sleep's wait, cut short by a CancelRequest (57014). */
  private async sleepOut(ms: number): Promise<void> {
    const end = Date.now() + ms;
    for (let left = ms; left > 0 && !this.cancelled; left = end - Date.now()) await new Promise((r) => setTimeout(r, Math.min(left, 50)));
    if (this.cancelled) throw new SqlError(SqlState.QUERY_CANCELED, 'canceling statement due to user request');
  }

  /** EXPLAIN: the plan; with ANALYZE the statement also runs (an UPDATE changes rows, as in PostgreSQL) and its figures follow. */
  private async explain(q: Node, params: SqlValue[], paramTypes: SqlTypeName[], analyze: boolean): Promise<StatementResult> {
    const r = await this.explainPlan(q, params, paramTypes);
    if (!analyze) return r;
    const t0 = performance.now();
    const ran = 'SelectStmt' in q ? await this.query(q, params, paramTypes) : 'InsertStmt' in q || 'UpdateStmt' in q || 'DeleteStmt' in q ? await this.dml(q, params, paramTypes) : undefined;
    if (!ran) throw notSupported(`EXPLAIN ANALYZE of ${Object.keys(q)[0]!.replace('Stmt', '')}`);
    const n = ran.rows?.length ?? Number(/\d+$/.exec(ran.tag)?.[0] ?? 0);
    return { ...r, rows: [...(r.rows ?? []), [`Actual rows: ${n}`], [`Execution Time: ${(performance.now() - t0).toFixed(3)} ms`]] };
  }

  private async explainPlan(q: Node, params: SqlValue[], paramTypes: SqlTypeName[]): Promise<StatementResult> {
    const ctx = this.context(params);
    const env: CompileEnv = { paramTypes, subquery: () => { throw new Error('unreachable'); } };
    const pushed = 'SelectStmt' in q && this.deps.flags.get(YSQL_ENABLE_AGGREGATE_PUSHDOWN) ? await pushdownPlan(q.SelectStmt, this.deps.catalog, this.pushFilters() ? { env, ctx } : undefined) : undefined;
    if (pushed) return { tag: 'EXPLAIN', fields: [{ name: 'QUERY PLAN', type: 'text', tableOid: 0, attnum: 0 }], rows: [[describePushdown(pushed)]] };
    const pre = await preload(q, { catalog: this.deps.catalog, table: this.tableFor(this.txn), env, ctx, rowsMax: this.rowsMax(), pushFilters: this.pushFilters() }, true);
    const lines = [...pre.plan];
    const rel = 'InsertStmt' in q || 'UpdateStmt' in q || 'DeleteStmt' in q ? dmlRelation(q) : undefined;
    if (rel) {
      const def = await this.deps.catalog.require(rel.relname ?? '', rel.location);
      const where = 'UpdateStmt' in q ? q.UpdateStmt.whereClause : 'DeleteStmt' in q ? q.DeleteStmt.whereClause : undefined;
      const verb = Object.keys(q)[0]!.replace('Stmt', '');
      const alias = rel.alias?.aliasname ?? def.name;
      const path = 'InsertStmt' in q ? undefined : chooseAccess(def, alias, where, env, ctx);
      const filter = path && this.pushFilters() && (path.type === 'full' || path.type === 'hashScan') ? tabletFilter(def, alias, where, env, ctx) : undefined;
      lines.unshift(`${verb} on ${def.name}${path ? ` via ${describePath(def, path)}${describeFilter(filter, where)}` : ''}`);
    }
    if (lines.length === 0) lines.push('Result (no table read)');
    return { tag: 'EXPLAIN', fields: [{ name: 'QUERY PLAN', type: 'text', tableOid: 0, attnum: 0 }], rows: lines.map((l) => [l]) };
  }

  private async dml(s: Node, params: SqlValue[], paramTypes: SqlTypeName[]): Promise<StatementResult> {
    if (readTimeOf(this.info) !== undefined) throw new SqlError(SqlState.READ_ONLY_SQL_TXN, `cannot execute ${Object.keys(s)[0]!.replace('Stmt', '').toUpperCase()} while yb_read_time is set (reads as of a past time are read-only; SET yb_read_time TO 0 first)`);
    const rel = dmlRelation(s);
    const def = await this.deps.catalog.require(rel.relname ?? '', rel.location);
    // A table with indexes writes its rows and their entries in one transaction, one row or many.
    const single = 'InsertStmt' in s && isSingleRowValues(s.InsertStmt) && !s.InsertStmt.onConflictClause && (def.indexes?.length ?? 0) === 0;
    // A statement outside BEGIN that may touch several rows (or reads before it writes) runs in its own transaction.
    // An UPDATE or DELETE keeps its writes to the commit (docs/transactions.md): when they fall in one
    // tablet the statement commits by the single-tablet fast path. Not an INSERT: its duplicate-key
    // error must come from the row's own write (ON CONFLICT, the constraint's name).
    const own = !this.txn && !single ? await this.deps.client.beginTransaction({ isolation: this.isolation, ...('InsertStmt' in s ? {} : { deferWrites: true }) }) : undefined;
    const txn = this.txn ?? own;
    try {
      const r = await this.runDml(s, def, rel, txn, params, paramTypes);
      if (this.cancelled) throw new SqlError(SqlState.QUERY_CANCELED, 'canceling statement due to user request');
      if (own) await own.commit();
      const verb = 'InsertStmt' in s ? 'INSERT 0' : 'UpdateStmt' in s ? 'UPDATE' : 'DELETE';
      return { tag: `${verb} ${r.count}`, ...(r.returning ? { fields: r.returning.fields, rows: r.returning.rows } : {}) };
    } catch (e) {
      if (own) await own.abort().catch(() => undefined);
      throw e;
    }
  }

  private async runDml(s: Node, def: SqlTableDef, rel: { relname?: string; alias?: { aliasname?: string } }, txn: Transaction | undefined, params: SqlValue[], paramTypes: SqlTypeName[]): Promise<DmlResult> {
    const ctx = this.context(params);
    const env: CompileEnv = { paramTypes, subquery: () => { throw new Error('unreachable'); } };
    const table = this.tableFor(txn);
    const pre = await preload(s, { catalog: this.deps.catalog, table, env, ctx, rowsMax: this.rowsMax() });
    // WITH queries before INSERT, UPDATE or DELETE (SELECTs: a data-modifying one is 0A000 in withCtes).
    const withClause = ('InsertStmt' in s ? s.InsertStmt : 'UpdateStmt' in s ? s.UpdateStmt : 'DeleteStmt' in s ? s.DeleteStmt : undefined)?.withClause;
    const planEnv = withClause ? withCtes(withClause, this.planEnv(paramTypes, pre.relations), undefined) : this.planEnv(paramTypes, pre.relations);
    // Subqueries in SET, WHERE, VALUES and RETURNING are planned over the relations read above.
    const deps: DmlDeps = { table, takeSequence: (n, k) => this.deps.sequences.take(n, k), fillSequences: (ast, n) => prepareSequences(ast, this.deps.sequences, n), env: compileEnv(planEnv), planEnv, ctx };
    if ('InsertStmt' in s) return insertRows(s.InsertStmt, def, deps);
    const alias = rel.alias?.aliasname ?? def.name;
    const body = 'UpdateStmt' in s ? s.UpdateStmt : (s as Extract<Node, { DeleteStmt: unknown }>).DeleteStmt;
    // With FROM / USING the WHERE joins tables: the target is read whole, the executor joins.
    const joins = ('UpdateStmt' in s ? s.UpdateStmt.fromClause : (body as { usingClause?: Node[] }).usingClause)?.length ?? 0;
    const where = joins > 0 ? undefined : body.whereClause;
    const path = chooseAccess(def, alias, where, env, ctx);
    const filter = this.pushFilters() && (path.type === 'full' || path.type === 'hashScan') ? tabletFilter(def, alias, where, env, ctx) : undefined;
    const candidates = await readRows(table, def, path, this.rowsMax(), undefined, undefined, filter?.ast);
    return updateOrDelete('UpdateStmt' in s ? 'update' : 'delete', body, def, alias, candidates, deps);
  }

  private async transactionStmt(t: Extract<Node, { TransactionStmt: unknown }>['TransactionStmt']): Promise<StatementResult> {
    switch (t.kind) {
      case 'TRANS_STMT_BEGIN':
      case 'TRANS_STMT_START': {
        if (this.inBlock) return { tag: 'BEGIN', notices: ['there is already a transaction in progress'] };
        const level = (t.options ?? []).map((o) => ('DefElem' in o && o.DefElem.defname === 'transaction_isolation' && o.DefElem.arg && 'A_Const' in o.DefElem.arg ? o.DefElem.arg.A_Const.sval?.sval ?? '' : '')).find((x) => x !== '');
        // READ COMMITTED and REPEATABLE READ run as snapshot isolation (YugabyteDB's default mapping); SERIALIZABLE as serializable.
        const isolation = level === 'serializable' ? 'serializable' : 'snapshot';
        this.info.now = new Date();
        this.inBlock = true;
        this.blockIsolation = isolation;
        return { tag: 'BEGIN' };
      }
      case 'TRANS_STMT_COMMIT': {
        this.savepoints.clear();
        this.ownRows.clear();
        const txn = this.txn;
        const failed = this.txnFailed;
        const wasInBlock = this.inBlock;
        this.txn = undefined;
        this.txnFailed = false;
        this.inBlock = false;
        if (failed) {
          await txn?.abort().catch(() => undefined);
          return { tag: 'ROLLBACK', notices: await this.undoBulkLoads() };
        }
        if (!txn) {
          this.bulk.committed();
          return { tag: 'COMMIT', notices: wasInBlock ? [] : ['there is no transaction in progress'] };
        }
        try {
          await txn.commit();
        } catch (e) {
          await this.undoBulkLoads();
          throw e;
        }
        this.bulk.committed();
        return { tag: 'COMMIT' };
      }
      case 'TRANS_STMT_ROLLBACK': {
        this.savepoints.clear();
        this.ownRows.clear();
        const txn = this.txn;
        const wasInBlock = this.inBlock;
        this.txn = undefined;
        this.txnFailed = false;
        this.inBlock = false;
        await txn?.abort().catch(() => undefined);
        const undone = await this.undoBulkLoads();
        return { tag: 'ROLLBACK', notices: txn || wasInBlock ? undone : ['there is no transaction in progress'] };
      }
      case 'TRANS_STMT_SAVEPOINT':
      case 'TRANS_STMT_RELEASE':
      case 'TRANS_STMT_ROLLBACK_TO':
        return this.savepointStmt(t.kind, t.savepoint_name ?? '');
      default:
        if (this.inBlock) this.txnFailed = true;
        throw notSupported((t.kind ?? '').replace('TRANS_STMT_', '').replace('_', ' '));
    }
  }

  private async savepointStmt(kind: 'TRANS_STMT_SAVEPOINT' | 'TRANS_STMT_RELEASE' | 'TRANS_STMT_ROLLBACK_TO', name: string): Promise<StatementResult> {
    const verb = kind === 'TRANS_STMT_SAVEPOINT' ? 'SAVEPOINT' : kind === 'TRANS_STMT_RELEASE' ? 'RELEASE SAVEPOINT' : 'ROLLBACK TO SAVEPOINT';
    if (!this.inBlock) throw new SqlError(SqlState.NO_ACTIVE_SQL_TXN, `${verb} can only be used in transaction blocks`);
    if (kind === 'TRANS_STMT_SAVEPOINT') {
      if (this.txnFailed) throw new SqlError(SqlState.IN_FAILED_TXN, 'current transaction is aborted, commands ignored until end of transaction block');
      this.savepoints.define(name);
      return { tag: 'SAVEPOINT' };
    }
    if (kind === 'TRANS_STMT_RELEASE') {
      if (this.txnFailed) throw new SqlError(SqlState.IN_FAILED_TXN, 'current transaction is aborted, commands ignored until end of transaction block');
      this.savepoints.release(name);
      return { tag: 'RELEASE' };
    }
    // The distributed transaction itself must still be usable: a conflict or an expiry aborted it whole.
    const txn = this.txn;
    if (txn && txn.state !== 'pending') {
      this.txnFailed = true;
      throw new SqlError(SqlState.SERIALIZATION_FAILURE, `cannot roll back to savepoint "${name}": the transaction was ${txn.state} by the cluster (a conflict or an expiry), not by a statement; ROLLBACK and retry the block`);
    }
    // The undo writes go around the block's table handles.
    this.ownRows.clear();
    try {
      // Images exist only once a statement wrote, and writing began the transaction.
      await this.savepoints.rollbackTo(name, (n) => txn!.table(n));
    } catch (e) {
      this.txnFailed = true;
      throw e;
    }
    this.txnFailed = false;
    return { tag: 'ROLLBACK' };
  }

  /** The connection ended: a transaction still open is aborted (its intents are cleaned up by the abort). */
  async close(): Promise<void> {
    this.savepoints.clear();
    this.ownRows.clear();
    const txn = this.txn;
    this.txn = undefined;
    this.inBlock = false;
    if (txn) await txn.abort().catch(() => undefined);
    await this.undoBulkLoads();
  }

  /** The block ended without a COMMIT: COPY's loads into tables it created or truncated are emptied again. */
  private undoBulkLoads(): Promise<string[]> {
    return this.bulk.aborted((name) => truncateTable(name, { client: this.deps.client, catalog: this.deps.catalog, sequences: this.deps.sequences }));
  }
}

function isDml(s: Node): boolean {
  return 'SelectStmt' in s || 'InsertStmt' in s || 'UpdateStmt' in s || 'DeleteStmt' in s;
}
