/**
 * One PostgreSQL protocol connection: startup (SSL/GSSENC refused with 'N', cancel requests),
 * authentication (trust, MD5, SCRAM-SHA-256), then the simple and the extended query protocol with
 * per-connection prepared statements and portals, and COPY. Statements run in the connection's
 * SqlSession. A protocol violation closes this connection only (08P01); a SQL error is an
 * ErrorResponse and the session goes on.
 */
import * as crypto from 'node:crypto';
import type * as net from 'node:net';
import { parseSql, type ParsedStatement } from '../sql-parser';
import type { SqlSession, StatementResult } from '../exec/session';
import { SqlError, SqlState, toSqlError } from '../exec/sql-error';
import { TYPES, typeByOid, type SqlTypeName, type SqlValue } from '../exec/sql-types';
import type { OutputField } from '../exec/select';
import { CATALOG_CACHE_TTL_MS } from '../exec/catalog';
import { md5Expected, scramServerFinal, scramServerFirst } from './pg-auth';
import { backend, decodeFrontend, decodeStartup, FrameSplitter, ProtocolError, type FrontendMessage } from './pg-messages';
import { MessageQueue } from './message-queue';
import { decodeParam, encodeValue, fieldDescription, maxParam, messageBytes, sameFields } from './pg-values';

/** Buffered answers are written once they reach this many bytes, even if more are coming. */
export const OUTPUT_FLUSH_BYTES = 64 * 1024;

/** Prepared statements and portals one connection may hold. */
export const PREPARED_STATEMENTS_MAX = 10_000;

export interface ConnectionDeps {
  /** A session for an authenticated user, or a SqlError (unknown database). */
  openSession: (user: string, database: string, pid: number) => SqlSession;
  password: string;
  authMethod: 'scram-sha-256' | 'md5';
  /** Startup and authentication must be done within this long (PostgreSQL's authentication_timeout). */
  authTimeoutMs?: number;
  /** A CancelRequest arrived: cancel the statement of the connection with this key, if any. */
  cancel: (pid: number, secret: number) => void;
  register: (c: PgConnection) => { pid: number; secret: number };
  unregister: (c: PgConnection) => void;
  log: (msg: string) => void;
}

interface Prepared {
  parsed: ParsedStatement | undefined;
  paramTypes: SqlTypeName[];
  paramOids: number[];
  /** The output columns of its last execution or description (see describedFields). */
  fields?: { value: OutputField[] | undefined; generation: number; atMs: number };
}

interface Portal {
  prepared: Prepared;
  params: SqlValue[];
  resultFormats: number[];
  /** What Describe answered for this portal: its Execute must return the same columns. */
  described?: OutputField[] | undefined;
  /** Rows not yet sent (Execute with a row limit). */
  remaining?: { fields: OutputField[] | undefined; rows: SqlValue[][]; tag: string };
}

export class PgConnection {
  private readonly splitter = new FrameSplitter();
  private readonly queue: MessageQueue<FrontendMessage>;
  private waiter: ((m: FrontendMessage | undefined) => void) | undefined;
  private closed = false;
  private session: SqlSession | undefined;
  private readonly statements = new Map<string, Prepared>();
  private readonly portals = new Map<string, Portal>();
  private cancelRequested: (() => void) | undefined;
  key = { pid: 0, secret: 0 };

  constructor(private readonly socket: net.Socket, private readonly deps: ConnectionDeps) {
    socket.setNoDelay(true);
    this.queue = new MessageQueue<FrontendMessage>({ pause: () => socket.pause(), resume: () => socket.resume() }, messageBytes);
    socket.on('data', (d: Buffer) => this.onData(d));
    socket.on('close', () => this.onClose());
    socket.on('error', () => this.onClose());
  }

  /** The server stops: close the socket (an open transaction is aborted). */
  close(): void {
    this.socket.destroy();
    this.onClose();
  }

  /** Cancel the running statement (57014 to its client). */
  cancel(): void {
    this.cancelRequested?.();
  }

  private onData(d: Buffer): void {
    if (this.closed) return;
    this.splitter.push(d);
    try {
      for (let m = this.splitter.next(); m; m = this.splitter.next()) {
        if (!this.session && m.type === 0) this.startupQueue.push(decodeStartup(m.body));
        else this.deliver(decodeFrontend(m.type, m.body));
        if (m.type === 0) this.startupWake?.();
      }
    } catch (e) {
      this.fatal(SqlState.PROTOCOL_VIOLATION, e instanceof ProtocolError ? e.message : `invalid frontend message: ${String(e)}`);
    }
  }

  private startupQueue: Array<ReturnType<typeof decodeStartup>> = [];
  private startupWake: (() => void) | undefined;

  private deliver(m: FrontendMessage): void {
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w(m);
    } else this.queue.push(m);
  }

  private next(): Promise<FrontendMessage | undefined> {
    const m = this.queue.shift();
    if (m) return Promise.resolve(m);
    if (this.closed) return Promise.resolve(undefined);
    this.flushOut();
    return new Promise((r) => (this.waiter = r));
  }

  private onClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.deps.unregister(this);
    this.waiter?.(undefined);
    this.startupWake?.();
    // A connection that drops mid-transaction aborts it (its intents are removed by the abort).
    void this.session?.close();
  }

  /**
   * Answers are buffered and written when the connection next waits for its client (or the buffer
   * passes OUTPUT_FLUSH_BYTES, or the client sent Flush), as PostgreSQL's backend does: a statement's
   * ParseComplete / BindComplete / rows / CommandComplete / ReadyForQuery leave in one write.
   * A write on loopback TCP also runs the receiver's side of the stack, so it is dear: a write per
   * await point was a third of the SQL node's time under pgbench -S.
   */
  private send(b: Buffer): void {
    if (this.closed) return;
    this.out.push(b);
    this.outBytes += b.length;
    if (this.outBytes >= OUTPUT_FLUSH_BYTES) this.flushOut();
  }

  private out: Buffer[] = [];
  private outBytes = 0;

  private flushOut(): void {
    if (this.out.length === 0) return;
    const parts = this.out;
    this.out = [];
    this.outBytes = 0;
    if (this.closed) return;
    this.socket.write(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
  }

  /** Wait while the socket's own buffer is full (send() has already written whatever passed the threshold). */
  private async drain(): Promise<void> {
    if (this.socket.writableNeedDrain && !this.closed) await new Promise<void>((r) => { this.socket.once('drain', r); this.socket.once('close', r); });
  }

  private fatal(code: string, message: string): void {
    if (this.closed) return;
    this.flushOut();
    this.socket.end(backend.error({ severity: 'FATAL', code, message }));
    this.onClose();
  }

  /** Run the connection until it closes. */
  async run(): Promise<void> {
    try {
      const ms = this.deps.authTimeoutMs;
      const timer = ms === undefined ? undefined : setTimeout(() => this.fatal(SqlState.QUERY_CANCELED, 'canceling authentication due to timeout'), ms);
      let started: boolean;
      try {
        started = await this.startup();
      } finally {
        clearTimeout(timer);
      }
      if (!started || this.closed) return;
      await this.mainLoop();
    } catch (e) {
      this.deps.log(`sql connection failed: ${e instanceof Error ? e.message : String(e)}`);
      this.fatal(SqlState.INTERNAL, e instanceof Error ? e.message : String(e));
    }
  }

  private async nextStartup(): Promise<ReturnType<typeof decodeStartup> | undefined> {
    while (this.startupQueue.length === 0) {
      if (this.closed) return undefined;
      this.flushOut();
      await new Promise<void>((r) => (this.startupWake = r));
    }
    return this.startupQueue.shift();
  }

  private async startup(): Promise<boolean> {
    for (;;) {
      const m = await this.nextStartup();
      if (!m) return false;
      if (m.type === 'ssl' || m.type === 'gssenc') {
        this.send(Buffer.from('N'));
        continue;
      }
      if (m.type === 'cancel') {
        this.deps.cancel(m.pid, m.secret);
        this.socket.end();
        this.onClose();
        return false;
      }
      this.splitter.startupDone();
      // Messages that arrived behind the startup packet were framed as startup packets: none are expected.
      const user = m.params['user'] ?? '';
      const database = m.params['database'] ?? user;
      if (!user) {
        this.fatal(SqlState.INVALID_AUTH, 'no PostgreSQL user name specified in startup packet');
        return false;
      }
      if (!(await this.authenticate(user))) return false;
      this.key = this.deps.register(this);
      try {
        this.session = this.deps.openSession(user, database, this.key.pid);
      } catch (e) {
        const se = toSqlError(e);
        this.fatal(se.sqlState, se.message);
        return false;
      }
      this.send(backend.authOk());
      const appName = m.params['application_name'] ?? '';
      this.session.info.settings.set('application_name', appName);
      const status: Array<[string, string]> = [
        ['server_version', '15.2-tessera'], ['server_encoding', 'UTF8'], ['client_encoding', 'UTF8'], ['DateStyle', 'ISO, MDY'],
        ['IntervalStyle', 'postgres'], ['TimeZone', 'UTC'], ['integer_datetimes', 'on'], ['standard_conforming_strings', 'on'],
        ['is_superuser', 'on'], ['session_authorization', user], ['application_name', appName], ['default_transaction_read_only', 'off'],
        ['in_hot_standby', 'off'], ['scram_iterations', '4096'],
      ];
      for (const [k, v] of status) this.send(backend.parameterStatus(k, v));
      this.send(backend.backendKeyData(this.key.pid, this.key.secret));
      this.send(backend.readyForQuery('I'));
      return true;
    }
  }

  private async authenticate(user: string): Promise<boolean> {
    if (!this.deps.password) return true;
    const fail = (): false => {
      this.fatal(SqlState.INVALID_PASSWORD, `password authentication failed for user "${user}"`);
      return false;
    };
    if (this.deps.authMethod === 'md5') {
      const salt = crypto.randomBytes(4);
      this.send(backend.authMd5(salt));
      const m = await this.next();
      if (!m || m.type !== 'password') return fail();
      const got = m.data.toString('utf8').replace(/\0$/, '');
      return got === md5Expected(user, this.deps.password, salt) || fail();
    }
    this.send(backend.authSasl(['SCRAM-SHA-256']));
    const first = await this.next();
    if (!first || first.type !== 'password') return fail();
    const mechEnd = first.data.indexOf(0);
    if (first.data.toString('utf8', 0, mechEnd) !== 'SCRAM-SHA-256') return fail();
    const len = first.data.readInt32BE(mechEnd + 1);
    let st;
    try {
      st = scramServerFirst(first.data.toString('utf8', mechEnd + 5, mechEnd + 5 + len));
    } catch {
      return fail();
    }
    this.send(backend.authSaslContinue(st.serverFirst));
    const final = await this.next();
    if (!final || final.type !== 'password') return fail();
    const v = scramServerFinal(st, this.deps.password, final.data.toString('utf8'));
    if (!v) return fail();
    this.send(backend.authSaslFinal(v));
    return true;
  }

  private async mainLoop(): Promise<void> {
    let skipToSync = false;
    for (;;) {
      const m = await this.next();
      if (!m || m.type === 'terminate') {
        this.flushOut();
        this.socket.end();
        this.onClose();
        return;
      }
      if (m.type === 'sync') {
        skipToSync = false;
        this.portals.delete('');
        this.send(backend.readyForQuery(this.session!.status()));
        continue;
      }
      if (m.type === 'flush') {
        this.flushOut();
        continue;
      }
      if (m.type === 'query') {
        await this.simpleQuery(m.sql);
        continue;
      }
      if (m.type === 'copyData' || m.type === 'copyDone' || m.type === 'copyFail') continue; // after a failed COPY: ignored until the next command
      if (skipToSync) continue;
      try {
        await this.extended(m);
      } catch (e) {
        this.sendError(e);
        skipToSync = true;
      }
    }
  }

  private sendError(e: unknown): void {
    const se = toSqlError(e);
    if (se.sqlState === SqlState.INTERNAL) this.deps.log(`sql statement failed: ${se.message}`);
    this.send(backend.error({ severity: 'ERROR', code: se.sqlState, message: se.message, ...se.extra }));
  }

  private notices(r: StatementResult): void {
    for (const n of r.notices ?? []) this.send(backend.error({ severity: 'NOTICE', code: '00000', message: n }));
  }

  /** Run a statement, racing a cancel request (57014; the session's transaction is then failed). */
  private async run1(ps: ParsedStatement, params: SqlValue[], types?: SqlTypeName[]): Promise<StatementResult> {
    const cancelled = new Promise<never>((_, reject) => (this.cancelRequested = () => {
      this.session!.cancel();
      reject(new SqlError(SqlState.QUERY_CANCELED, 'canceling statement due to user request'));
    }));
    cancelled.catch(() => undefined);
    try {
      return await Promise.race([this.session!.execute(ps, params, types), cancelled]);
    } finally {
      this.cancelRequested = undefined;
    }
  }

  private async simpleQuery(sql: string): Promise<void> {
    try {
      const stmts = parseSql(sql, this.session?.parseCacheOn ?? true);
      if (stmts.length === 0) this.send(backend.emptyQuery());
      for (const ps of stmts) {
        const r = await this.run1(ps, []);
        this.notices(r);
        if (r.copyIn) {
          this.send(r.copyIn.columns >= 0 ? backend.copyInResponse(r.copyIn.columns) : backend.copyInResponse(0));
          this.send(backend.commandComplete(await this.copyIn(r.copyIn)));
          continue;
        }
        if (r.copyOut) {
          this.send(backend.copyOutResponse(r.copyOut.columns));
          for (const l of r.copyOut.lines) {
            this.send(backend.copyData(l));
            await this.drain();
          }
          this.send(backend.copyDone());
          this.send(backend.commandComplete(r.tag));
          continue;
        }
        if (r.fields) this.send(rowDescriptionOf(r.fields, r.fieldsKept === true));
        await this.sendRows(r.fields, r.rows ?? [], []);
        this.send(backend.commandComplete(r.tag));
      }
    } catch (e) {
      this.sendError(e);
    }
    this.send(backend.readyForQuery(this.session!.status()));
  }

  private async copyIn(sink: NonNullable<StatementResult['copyIn']>): Promise<string> {
    let failure: unknown;
    for (;;) {
      const m = await this.next();
      if (!m) throw new SqlError(SqlState.CONNECTION_FAILURE, 'connection closed during COPY');
      if (m.type === 'copyData') {
        if (failure === undefined) await sink.write(m.data).catch((e: unknown) => (failure = e));
      } else if (m.type === 'copyDone') {
        if (failure !== undefined) throw failure;
        return sink.done();
      } else if (m.type === 'copyFail') throw new SqlError(SqlState.QUERY_CANCELED, `COPY from stdin failed: ${m.message}`);
      else if (m.type !== 'flush' && m.type !== 'sync') throw new SqlError(SqlState.PROTOCOL_VIOLATION, `unexpected message type during COPY from stdin`);
    }
  }

  private async sendRows(fields: OutputField[] | undefined, rows: SqlValue[][], formats: number[]): Promise<void> {
    const types = (fields ?? []).map((f) => f.type);
    for (const r of rows) {
      this.send(backend.dataRow(r.map((v, i) => encodeValue(v, types[i] ?? 'text', formats.length === 1 ? formats[0]! : (formats[i] ?? 0)))));
      await this.drain();
    }
  }

  private async extended(m: FrontendMessage): Promise<void> {
    switch (m.type) {
      case 'parse': {
        const stmts = parseSql(m.sql, this.session?.parseCacheOn ?? true);
        if (stmts.length > 1) throw new SqlError(SqlState.SYNTAX_ERROR, 'cannot insert multiple commands into a prepared statement');
        if (m.name !== '' && this.statements.has(m.name)) throw new SqlError(SqlState.DUPLICATE_PSTATEMENT, `prepared statement "${m.name}" already exists`);
        if (this.statements.size >= PREPARED_STATEMENTS_MAX) throw new SqlError(SqlState.PROGRAM_LIMIT, `a connection holds at most ${PREPARED_STATEMENTS_MAX} prepared statements`);
        const nParams = maxParam(m.sql);
        const paramOids = Array.from({ length: Math.max(nParams, m.paramTypes.length) }, (_, i) => m.paramTypes[i] ?? 0);
        const paramTypes = paramOids.map((o) => (o === 0 ? 'unknown' : typeByOid(o) ?? 'unknown'));
        this.statements.set(m.name, { parsed: stmts[0], paramTypes, paramOids });
        this.send(backend.parseComplete());
        return;
      }
      case 'bind': {
        const p = this.statements.get(m.statement);
        if (!p) throw new SqlError(SqlState.INVALID_PSTATEMENT, `prepared statement "${m.statement}" does not exist`);
        if (m.params.length !== p.paramOids.length) throw new SqlError(SqlState.PROTOCOL_VIOLATION, `bind message supplies ${m.params.length} parameters, but prepared statement "${m.statement}" requires ${p.paramOids.length}`);
        const params = m.params.map((b, i) => decodeParam(b, m.paramFormats.length === 1 ? m.paramFormats[0]! : (m.paramFormats[i] ?? 0), p.paramTypes[i]!));
        this.portals.set(m.portal, { prepared: p, params, resultFormats: m.resultFormats });
        this.send(backend.bindComplete());
        return;
      }
      case 'describe': {
        if (m.kind === 'S') {
          const p = this.statements.get(m.name);
          if (!p) throw new SqlError(SqlState.INVALID_PSTATEMENT, `prepared statement "${m.name}" does not exist`);
          this.send(backend.parameterDescription(p.paramOids.map((o, i) => (o === 0 ? TYPES[p.paramTypes[i] === 'unknown' ? 'text' : p.paramTypes[i]!].oid : o))));
          const fields = p.parsed ? await this.session!.describe(p.parsed, p.paramTypes) : undefined;
          this.send(fields ? backend.rowDescription(fields.map(fieldDescription)) : backend.noData());
          return;
        }
        const portal = this.portals.get(m.name);
        if (!portal) throw new SqlError(SqlState.INVALID_CURSOR, `portal "${m.name}" does not exist`);
        const fields = await this.describedFields(portal.prepared);
        portal.described = fields;
        this.send(fields ? backend.rowDescription(fields.map(fieldDescription), portal.resultFormats) : backend.noData());
        return;
      }
      case 'execute':
        return this.executePortal(m.portal, m.maxRows);
      case 'close':
        if (m.kind === 'S') this.statements.delete(m.name);
        else this.portals.delete(m.name);
        this.send(backend.closeComplete());
        return;
      default:
        throw new SqlError(SqlState.PROTOCOL_VIOLATION, `unexpected message ${m.type}`);
    }
  }

  /**
   * A prepared statement's output columns for Describe(portal): libpq's PQexecPrepared sends Bind,
   * Describe, Execute for every execution, and describing anew (catalog look-ups, a plan) cost as much
   * as a point SELECT's own planning. The columns of its last execution or description are reused
   * while as fresh as the catalog cache itself (CATALOG_CACHE_TTL_MS, and no local DDL since);
   * executePortal refuses an execution whose columns differ from what was described.
   */
  private async describedFields(p: Prepared): Promise<OutputField[] | undefined> {
    if (!p.parsed) return undefined;
    const generation = this.session!.catalogGeneration();
    const c = p.fields;
    if (c && c.generation === generation && performance.now() - c.atMs < CATALOG_CACHE_TTL_MS) return c.value;
    const value = await this.session!.describe(p.parsed, p.paramTypes);
    p.fields = { value, generation, atMs: performance.now() };
    return value;
  }

  private async executePortal(name: string, maxRows: number): Promise<void> {
    const portal = this.portals.get(name);
    if (!portal) throw new SqlError(SqlState.INVALID_CURSOR, `portal "${name}" does not exist`);
    if (!portal.prepared.parsed) {
      this.send(backend.emptyQuery());
      return;
    }
    if (!portal.remaining) {
      const r = await this.run1(portal.prepared.parsed, portal.params, portal.prepared.paramTypes);
      this.notices(r);
      if (r.copyIn || r.copyOut) throw new SqlError(SqlState.FEATURE_NOT_SUPPORTED, 'COPY through the extended query protocol is not supported by tessera (use a simple query)');
      // The client was told the columns at Describe (possibly from the cache): a table changed since
      // must not go out under the old description — PostgreSQL's own error for a replanned statement.
      if ('described' in portal && !sameFields(portal.described, r.fields)) {
        portal.prepared.fields = undefined;
        throw new SqlError(SqlState.FEATURE_NOT_SUPPORTED, 'cached plan must not change result type');
      }
      portal.prepared.fields = { value: r.fields, generation: this.session!.catalogGeneration(), atMs: performance.now() };
      portal.remaining = { fields: r.fields, rows: r.rows ?? [], tag: r.tag };
    }
    const rem = portal.remaining;
    const take = maxRows > 0 ? rem.rows.splice(0, maxRows) : rem.rows.splice(0);
    await this.sendRows(rem.fields, take, portal.resultFormats);
    if (rem.rows.length > 0) this.send(backend.portalSuspended());
    else this.send(backend.commandComplete(rem.tag));
  }
}

/** RowDescription bytes of kept plans' field lists (sql/exec/plan-cache.ts), encoded once; weak: they go with the plan. */
const keptRowDescriptions = new WeakMap<object, Buffer>();

function rowDescriptionOf(fields: OutputField[], kept: boolean): Buffer {
  let b = kept ? keptRowDescriptions.get(fields) : undefined;
  if (!b) {
    b = backend.rowDescription(fields.map(fieldDescription));
    if (kept) keptRowDescriptions.set(fields, b);
  }
  return b;
}
