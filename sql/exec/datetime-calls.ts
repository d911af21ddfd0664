/**
 * The date and time functions, compiled with their arguments' types (extract of an interval is not
 * extract of a date): docs/sql.md, "Dates, times and intervals". Others are in functions.ts.
 */
import { age, dateTrunc, extractField, fromEpoch, isDateTimeType, makeTimestamp } from './datetime';
import type { Compiled } from './scope';
import { SqlError, SqlState } from './sql-error';
import { coerce, textOf, type SqlTypeName, type SqlValue } from './sql-types';
import { toChar } from './to-char';

function call(type: SqlTypeName, name: string, args: Compiled[], f: (v: SqlValue[], ctx: Parameters<Compiled['eval']>[1]) => SqlValue): Compiled {
  return { type, name, eval: (row, ctx) => {
    const v = args.map((a) => a.eval(row, ctx));
    return v.some((x) => x === null) ? null : f(v, ctx);
  } };
}

const argType = (a: Compiled | undefined): SqlTypeName => (!a || a.type === 'unknown' ? 'timestamptz' : a.type);

function arity(name: string, args: Compiled[], lo: number, hi = lo): void {
  if (args.length < lo || args.length > hi) throw new SqlError(SqlState.UNDEFINED_FUNCTION, `function ${name}(${args.map((a) => a.type).join(', ')}) does not exist`);
}

/** The compiled call of a date/time function, or undefined for any other name. */
export function datetimeCall(fname: string, args: Compiled[]): Compiled | undefined {
  switch (fname) {
    case 'extract': case 'date_part': {
      arity(fname, args, 2);
      const t = argType(args[1]);
      const numeric = fname === 'extract';
      return call(numeric ? 'numeric' : 'float8', fname, args, (v) => { const s = extractField(textOf(v[0]!), v[1]!, t); return numeric ? s : Number(s); });
    }
    case 'date_trunc': {
      arity(fname, args, 2);
      const t = argType(args[1]);
      return call(t === 'timestamp' ? 'timestamp' : t === 'interval' ? 'interval' : 'timestamptz', fname, args, (v) => dateTrunc(textOf(v[0]!), v[1]!, t));
    }
    case 'age': {
      arity(fname, args, 1, 2);
      return call('interval', fname, args, (v, ctx) => (v.length === 2 ? age(v[0]!, v[1]!) : age(coerce(ctx.session.now.toISOString().slice(0, 10), 'timestamp'), v[0]!)));
    }
    case 'make_date':
      arity(fname, args, 3);
      return call('date', fname, args, (v) => makeTimestamp(v.map((x) => Number(coerce(x, 'float8'))), 'date'));
    case 'make_timestamp':
      arity(fname, args, 6);
      return call('timestamp', fname, args, (v) => makeTimestamp(v.map((x) => Number(coerce(x, 'float8'))), 'timestamp'));
    case 'to_timestamp':
      arity(fname, args, 1);
      return call('timestamptz', fname, args, (v) => fromEpoch(Number(coerce(v[0]!, 'float8'))));
    case 'to_char': {
      arity(fname, args, 2);
      const t = args[0]!.type === 'unknown' ? 'numeric' : args[0]!.type;
      if (!isDateTimeType(t) && t !== 'interval' && !['int2', 'int4', 'int8', 'float4', 'float8', 'numeric'].includes(t)) throw new SqlError(SqlState.UNDEFINED_FUNCTION, `function to_char(${t}, unknown) does not exist`);
      return call('text', fname, args, (v) => toChar(v[0]!, t, textOf(v[1]!)));
    }
    default:
      return undefined;
  }
}
