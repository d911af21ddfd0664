/**
 * COPY … FROM STDIN and COPY … TO STDOUT, text and CSV formats. Incoming rows are parsed as they
 * arrive and written in batches of COPY_BATCH_ROWS through the client's batch writes (upsertMany:
 * one RPC per tablet per batch) when the key is generated (hidden row id, serial); rows with given
 * keys are inserted (a duplicate is 23505), bounded in flight.
 */
import * as crypto from 'node:crypto';
import type { Row, Table } from '../../client';
import { DbError, ErrorCode } from '../../common/errors';
import type { Node } from '../sql-parser';
import { names } from './ast';
import type { SqlCatalog, SqlTableDef } from './catalog';
import { checkRow, STATEMENT_WRITES_IN_FLIGHT_MAX, type CheckEnv } from './dml';
import { notSupported, SqlError, SqlState } from './sql-error';
import { outputText, type SqlValue } from './sql-types';
import { readRows, SCAN_TIMEOUT_MS } from './access';
import { indexInsert } from './indexes';
import { WritePipeline } from './write-pipeline';

export const COPY_BATCH_ROWS = 5000;
/**
 * Batches of one COPY written at the same time: parsing the next batch and the tablets' Raft rounds
 * for the previous ones overlap, instead of the connection waiting out each batch's round trip.
 */
export const COPY_BATCHES_IN_FLIGHT = 4;
/** A COPY line longer than this is refused (54000): it protects the server's memory. */
export const COPY_LINE_BYTES_MAX = 64 * 1024 * 1024;

export interface CopyIn {
  columns: number;
  write(data: Buffer): Promise<void>;
  /** End of data: flush and return the command tag. */
  done(): Promise<string>;
}

export interface CopyOut {
  columns: number;
  lines: Buffer[];
}

export interface CopyDeps {
  catalog: SqlCatalog;
  table: (name: string) => Table;
  rowsMax: number;
  takeSequence: (name: string, n: number) => Promise<bigint[]>;
  /** Where the table's CHECK constraints are evaluated. */
  checks?: CheckEnv;
}

interface Format {
  csv: boolean;
  delimiter: string;
  nullText: string;
  header: boolean;
}

function format(options: Node[] | undefined): Format {
  const f: Format = { csv: false, delimiter: '\t', nullText: '\\N', header: false };
  for (const o of options ?? []) {
    if (!('DefElem' in o)) continue;
    const name = o.DefElem.defname;
    const arg = o.DefElem.arg;
    const val = arg && 'String' in arg ? arg.String.sval ?? '' : arg && 'A_Const' in arg ? arg.A_Const.sval?.sval ?? '' : arg && 'Boolean' in arg ? String(arg.Boolean.boolval === true) : '';
    if (name === 'format') {
      if (val === 'csv') Object.assign(f, { csv: true, delimiter: ',', nullText: '' });
      else if (val !== 'text') throw notSupported(`COPY format ${val}`);
    } else if (name === 'delimiter') f.delimiter = val;
    else if (name === 'null') f.nullText = val;
    else if (name === 'header') f.header = val !== 'false';
    else if (name === 'freeze' || name === 'encoding') continue;
    else throw notSupported(`COPY option ${name ?? ''}`);
  }
  return f;
}

function unescapeText(s: string): string {
  // Most fields of a bulk load have no escapes: skip the regular expression for them.
  if (!s.includes('\\')) return s;
  return s.replace(/\\(.)/g, (_m, c: string) => ({ t: '\t', n: '\n', r: '\r', b: '\b', f: '\f', v: '\v' })[c] ?? c);
}

function parseLine(line: string, f: Format): Array<string | null> {
  if (!f.csv) return line.split(f.delimiter).map((x) => (x === f.nullText ? null : unescapeText(x)));
  const out: Array<string | null> = [];
  let i = 0;
  for (;;) {
    let v = '';
    let quoted = false;
    if (line[i] === '"') {
      quoted = true;
      i++;
      for (;;) {
        if (i >= line.length) throw new SqlError(SqlState.INVALID_TEXT, 'unterminated CSV quoted field');
        if (line[i] === '"') {
          if (line[i + 1] === '"') { v += '"'; i += 2; continue; }
          i++;
          break;
        }
        v += line[i++];
      }
    }
    while (i < line.length && line[i] !== f.delimiter) v += line[i++];
    out.push(!quoted && v === f.nullText ? null : v);
    if (i >= line.length) return out;
    i++;
  }
}

export async function copyStatement(c: Extract<Node, { CopyStmt: unknown }>['CopyStmt'], deps: CopyDeps): Promise<{ tag: string; copyIn?: CopyIn; copyOut?: CopyOut }> {
  if (c.filename !== undefined || c.is_program) throw notSupported('COPY to or from a file or program (use STDIN / STDOUT)');
  if (c.query) throw notSupported('COPY (query) TO');
  const def = await deps.catalog.require(c.relation?.relname ?? '', c.relation?.location);
  const f = format(c.options);
  const cols = c.attlist ? names(c.attlist) : def.columns.filter((x) => !x.hidden).map((x) => x.name);
  const idx = cols.map((n) => {
    const i = def.columns.findIndex((x) => x.name === n && !x.hidden);
    if (i < 0) throw new SqlError(SqlState.UNDEFINED_COLUMN, `column "${n}" of relation "${def.name}" does not exist`);
    return i;
  });
  if (!c.is_from) {
    const rows = await readRows(deps.table, def, { type: 'full' }, deps.rowsMax);
    const lines = rows.map((r) => Buffer.from(idx.map((i) => encodeField(r[i]!, def.columns[i]!.type, f)).join(f.delimiter) + '\n'));
    if (f.header) lines.unshift(Buffer.from(cols.join(f.delimiter) + '\n'));
    return { tag: `COPY ${rows.length}`, copyOut: { columns: cols.length, lines } };
  }
  return { tag: 'COPY', copyIn: new CopyInSink(def, idx, f, deps) };
}

function encodeField(v: SqlValue, type: import('./sql-types').SqlTypeName, f: Format): string {
  const t = outputText(v, type);
  if (t === null) return f.nullText;
  if (f.csv) return /[",\n\r]/.test(t) || t === '' ? `"${t.replace(/"/g, '""')}"` : t;
  return t.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r');
}

class CopyInSink implements CopyIn {
  readonly columns: number;
  private partial = '';
  private pending: Array<Array<string | null>> = [];
  private count = 0;
  private ended = false;
  private skipHeader: boolean;
  private readonly writes = new WritePipeline(COPY_BATCHES_IN_FLIGHT);

  constructor(private readonly def: SqlTableDef, private readonly idx: number[], private readonly f: Format, private readonly deps: CopyDeps) {
    this.columns = idx.length;
    this.skipHeader = f.header;
  }

  async write(data: Buffer): Promise<void> {
    const text = this.partial + data.toString('utf8');
    const lines = text.split('\n');
    this.partial = lines.pop() ?? '';
    if (this.partial.length > COPY_LINE_BYTES_MAX) throw new SqlError(SqlState.PROGRAM_LIMIT, `COPY line longer than ${COPY_LINE_BYTES_MAX} bytes`);
    for (const raw of lines) this.line(raw);
    // Batches of exactly COPY_BATCH_ROWS, however many lines one CopyData message carried.
    while (this.pending.length >= COPY_BATCH_ROWS) await this.writes.add(this.flush(this.pending.splice(0, COPY_BATCH_ROWS)));
  }

  private line(raw: string): void {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (this.ended || line === '\\.') {
      this.ended = true;
      return;
    }
    if (this.skipHeader) {
      this.skipHeader = false;
      return;
    }
    const fields = parseLine(line, this.f);
    if (fields.length !== this.idx.length) throw new SqlError(SqlState.INVALID_TEXT, fields.length < this.idx.length ? `missing data for column "${this.def.columns[this.idx[fields.length]!]!.name}"` : 'extra data after last expected column');
    this.pending.push(fields);
  }

  async done(): Promise<string> {
    if (this.partial !== '') this.line(this.partial);
    this.partial = '';
    await this.writes.add(this.flush(this.pending.splice(0)));
    await this.writes.drain();
    return `COPY ${this.count}`;
  }

  private async flush(batch: Array<Array<string | null>>): Promise<void> {
    if (batch.length === 0) return;
    const def = this.def;
    const full: SqlValue[][] = batch.map((fields) => {
      const r = new Array<SqlValue>(def.columns.length).fill(null);
      fields.forEach((v, k) => (r[this.idx[k]!] = v));
      return r;
    });
    const keyCols = [...def.hash, ...def.range];
    const generated = new Set<string>();
    for (const [ci, c] of def.columns.entries()) {
      if (this.idx.includes(ci)) continue;
      if (c.hidden) {
        const rnd = crypto.randomBytes(8 * full.length);
        full.forEach((r, i) => (r[ci] = rnd.readBigInt64BE(8 * i)));
      }
      else if (c.sequence) {
        const vals = await this.deps.takeSequence(c.sequence, full.length);
        full.forEach((r, i) => (r[ci] = vals[i]!));
      } else continue;
      generated.add(c.name);
    }
    const rows: Row[] = full.map((r) => checkRow(def, r, this.deps.checks));
    const t = this.deps.table(def.name);
    if (keyCols.every((k) => generated.has(k))) await t.upsertMany(rows, { timeoutMs: SCAN_TIMEOUT_MS });
    else {
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < rows.length) {
          const r = rows[next++]!;
          try {
            await t.insert(r);
          } catch (e) {
            if (e instanceof DbError && e.code === ErrorCode.ALREADY_EXISTS) throw new SqlError(SqlState.UNIQUE_VIOLATION, `duplicate key value violates unique constraint "${def.name}_pkey"`);
            throw e;
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(STATEMENT_WRITES_IN_FLIGHT_MAX, rows.length) }, worker));
    }
    // COPY writes outside a transaction (batches commit on their own): the index entries follow each batch.
    await indexInsert(def, this.deps.table, rows);
    this.count += rows.length;
  }
}
