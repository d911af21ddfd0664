/** Arrays in their PostgreSQL text form (`{a,"b c",NULL}`): tessera's arrays travel as that text. */
import { textOf, type SqlValue } from './sql-types';

/** Elements of an array's text form ('{a,"b c",NULL}'). */
export function parseArrayText(s: string): SqlValue[] {
  const inner = s.trim().replace(/^\{/, '').replace(/\}$/, '');
  if (inner === '') return [];
  const out: SqlValue[] = [];
  for (const m of inner.matchAll(/"((?:[^"\\]|\\.)*)"|([^,]+)/g)) out.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2]!.trim() === 'NULL' ? null : m[2]!.trim());
  return out;
}

export function arrayElementText(v: SqlValue): string {
  if (v === null) return 'NULL';
  const t = textOf(v);
  return /^[^",{}\s\\]+$/.test(t) && t !== 'NULL' ? t : `"${t.replace(/(["\\])/g, '\\$1')}"`;
}
