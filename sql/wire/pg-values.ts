/**
 * Values and small pieces of the PostgreSQL protocol a connection needs: text and binary encodings
 * of result values and parameters, field descriptions, and sizes of queued messages.
 */
import { coerce, outputText, TYPES, type SqlTypeName, type SqlValue } from '../exec/sql-types';
import { SqlError, SqlState } from '../exec/sql-error';
import type { OutputField } from '../exec/select';
import type { FieldDescription, FrontendMessage } from './pg-messages';

export function sameFields(a: OutputField[] | undefined, b: OutputField[] | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  // Count and names: what a client matches DataRows against (a type differing only in inference is not refused).
  return a.length === b.length && a.every((f, i) => f.name === b[i]!.name);
}

/** Roughly what a queued message holds in memory (for the queue's backpressure). */
export function messageBytes(m: FrontendMessage): number {
  switch (m.type) {
    case 'copyData':
      return m.data.length + 64;
    case 'query':
    case 'parse':
      return m.sql.length + 64;
    case 'bind':
      return m.params.reduce((n, p) => n + (p?.length ?? 0), 64);
    default:
      return 64;
  }
}

export function maxParam(sql: string): number {
  let max = 0;
  for (const m of sql.matchAll(/\$(\d+)/g)) max = Math.max(max, Number(m[1]));
  return max;
}

export function fieldDescription(f: OutputField): FieldDescription {
  return { name: f.name, tableOid: f.tableOid, columnAttr: f.attnum, typeOid: TYPES[f.type].oid, typeSize: TYPES[f.type].size, typeMod: -1 };
}

export function encodeValue(v: SqlValue, type: SqlTypeName, format: number): Buffer | null {
  if (v === null) return null;
  if (format === 1) return encodeBinary(v, type);
  const t = outputText(v, type);
  return t === null ? null : Buffer.from(t, 'utf8');
}

function encodeBinary(v: SqlValue, type: SqlTypeName): Buffer {
  const b = Buffer.alloc(8);
  switch (type) {
    case 'int2': b.writeInt16BE(Number(coerce(v, 'int2'))); return b.subarray(0, 2);
    case 'int4': case 'oid': b.writeInt32BE(Number(coerce(v, 'int4'))); return b.subarray(0, 4);
    case 'int8': b.writeBigInt64BE(coerce(v, 'int8') as bigint); return b;
    case 'float8': b.writeDoubleBE(Number(v)); return b;
    case 'float4': b.writeFloatBE(Number(v)); return b.subarray(0, 4);
    case 'bool': return Buffer.from([coerce(v, 'bool') ? 1 : 0]);
    case 'bytea': return Buffer.from(v as Uint8Array);
    case 'text': case 'varchar': case 'bpchar': case 'name': case 'unknown': case 'jsonb': return Buffer.from(outputText(v, type) ?? '', 'utf8');
    default: throw new SqlError(SqlState.FEATURE_NOT_SUPPORTED, `binary output of type ${type} is not supported by tessera`);
  }
}

export function decodeParam(b: Buffer | null, format: number, type: SqlTypeName): SqlValue {
  if (b === null) return null;
  if (format === 0) return b.toString('utf8');
  switch (type) {
    case 'int2': return BigInt(b.readInt16BE());
    case 'int4': case 'oid': return BigInt(b.readInt32BE());
    case 'int8': return b.readBigInt64BE();
    case 'float8': return b.readDoubleBE();
    case 'float4': return b.readFloatBE();
    case 'bool': return b[0] !== 0;
    case 'bytea': return Uint8Array.from(b);
    case 'unknown': case 'text': case 'varchar': case 'name': case 'bpchar': case 'jsonb': return b.toString('utf8');
    default: throw new SqlError(SqlState.FEATURE_NOT_SUPPORTED, `binary parameters of type ${type} are not supported by tessera`);
  }
}
