/** SET / SHOW of session settings (kept per session; only a few change behaviour). */
import type { Node } from '../sql-parser';
import type { SessionInfo } from './scope';
import { SqlError, SqlState } from './sql-error';
import { htFrom } from '../../common/hybrid-time';

type VariableSetStmt = Extract<Node, { VariableSetStmt: unknown }>['VariableSetStmt'];

function argText(n: Node): string {
  if ('A_Const' in n) {
    const c = n.A_Const;
    return c.sval?.sval ?? c.fval?.fval ?? (c.boolval ? String(c.boolval.boolval === true) : String(c.ival?.ival ?? 0));
  }
  if ('TypeCast' in n) return argText(n.TypeCast.arg!);
  return '';
}

export function setVariable(info: SessionInfo, st: VariableSetStmt): void {
  const name = (st.name ?? '').toLowerCase();
  if (st.kind === 'VAR_RESET_ALL') return;
  if (st.kind === 'VAR_RESET' || st.kind === 'VAR_SET_DEFAULT') {
    info.settings.delete(name);
    return;
  }
  const value = (st.args ?? []).map(argText).join(', ');
  if (name === 'yb_read_time') checkReadTime(value);
  if (name === 'timezone' && !/^(utc|gmt|z|etc\/utc|\+?0+)$/i.test(value)) throw new SqlError(SqlState.FEATURE_NOT_SUPPORTED, `time zone "${value}" is not supported by tessera (UTC only)`);
  info.settings.set(name, value);
}

export function showVariable(info: SessionInfo, name: string): string {
  const n = name.toLowerCase();
  if (n === 'all') return [...info.settings.entries()].map(([k, v]) => `${k}=${v}`).join(', ');
  const v = info.settings.get(n);
  if (v === undefined) throw new SqlError(SqlState.UNDEFINED_OBJECT, `unrecognized configuration parameter "${name}"`);
  return v;
}

/**
 * YugabyteDB's `yb_read_time`: reads as of a past time — microseconds since the epoch, or a hybrid
 * time with the suffix `ht`; 0 (the default) reads the present. Undefined: not set.
 */
export function readTimeOf(info: SessionInfo): bigint | undefined {
  const v = info.settings.get('yb_read_time');
  // The default, asked by every statement: no parse.
  if (v === undefined || v === '0') return undefined;
  const t = checkReadTime(v);
  return t === 0n ? undefined : t;
}

function checkReadTime(value: string): bigint {
  const m = /^\s*'?(\d{1,20})(\s*ht)?'?\s*$/i.exec(value);
  if (!m) throw new SqlError(SqlState.INVALID_PARAMETER_VALUE, `invalid value for parameter "yb_read_time": "${value}"`, { hint: 'microseconds since the epoch (e.g. 1765000000000000), a hybrid time followed by ht, or 0 for the present' });
  const n = BigInt(m[1]!);
  if (m[2]) return n;
  // Microseconds since the epoch as a hybrid time (logical part 0).
  return htFrom(n);
}
