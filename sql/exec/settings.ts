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
  const defaults = defaultSettings(info.user);
  if (st.kind === 'VAR_RESET_ALL') {
    for (const k of [...info.settings.keys()]) if (!defaults.has(k)) info.settings.delete(k);
    for (const [k, v] of defaults) info.settings.set(k, v);
    return;
  }
  if (st.kind === 'VAR_RESET' || st.kind === 'VAR_SET_DEFAULT') {
    // Back to the default (a parameter without one, set by this session, is dropped).
    const d = defaults.get(name);
    if (d === undefined) info.settings.delete(name);
    else info.settings.set(name, d);
    return;
  }
  const value = (st.args ?? []).map(argText).join(', ');
  if (name === 'yb_read_time') checkReadTime(value);
  if (name === 'timezone' && !/^(utc|gmt|z|etc\/utc|\+?0+)$/i.test(value)) throw new SqlError(SqlState.FEATURE_NOT_SUPPORTED, `time zone "${value}" is not supported by tessera (UTC only)`);
  info.settings.set(name, value);
}

/** SHOW ALL: every setting of the session, by name, as PostgreSQL's three columns. */
export function showAll(info: SessionInfo): string[][] {
  return [...info.settings.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => [k, v, DESCRIPTIONS[k] ?? '']);
}

const DESCRIPTIONS: Record<string, string> = {
  yb_read_time: 'Reads as of a past time: microseconds since the epoch, a hybrid time with the suffix ht, or 0 for the present (docs/sql.md).',
  timezone: 'Sets the time zone for displaying and interpreting time stamps (UTC only in tessera).',
  statement_timeout: 'Sets the maximum allowed duration of any statement.',
  default_transaction_isolation: 'Sets the transaction isolation level of each new transaction.',
  application_name: 'Sets the application name to be reported in statistics and logs.',
  client_encoding: "Sets the client's character set encoding.",
  datestyle: 'Sets the display format for date and time values.',
  search_path: 'Sets the schema search order for names that are not schema-qualified.',
};

export function showVariable(info: SessionInfo, name: string): string {
  const n = name.toLowerCase();
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

/** The settings a session starts with (SHOW answers them; RESET goes back to them). */
export function defaultSettings(user: string): Map<string, string> {
  return new Map([
    ['server_version', '15.2-tessera'], ['server_version_num', '150002'], ['server_encoding', 'UTF8'], ['client_encoding', 'UTF8'],
    ['datestyle', 'ISO, MDY'], ['intervalstyle', 'postgres'], ['timezone', 'UTC'], ['integer_datetimes', 'on'],
    ['standard_conforming_strings', 'on'], ['application_name', ''], ['search_path', '"$user", public'],
    ['yb_read_time', '0'],
    ['transaction_isolation', 'read committed'], ['default_transaction_isolation', 'read committed'], ['is_superuser', 'on'],
    ['session_authorization', user], ['max_identifier_length', '63'], ['lc_collate', 'C'], ['lc_ctype', 'C'], ['max_index_keys', '32'],
    ['statement_timeout', '0'], ['extra_float_digits', '1'], ['client_min_messages', 'notice'],
  ]);
}
