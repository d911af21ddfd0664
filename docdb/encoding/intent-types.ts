/**
 * Intent types: what a transaction's provisional record on a key claims. A set of them is one byte
 * (stored after Tag.INTENT_TYPE_SET in an intent key).
 *
 * Strong intents go on the exact key read or written, weak intents on each of its ancestors (the
 * row when a column is written), so a row-level operation and a column-level one still meet.
 *
 * Conflict rule (YugabyteDB `lock_util.cc`; docs/architecture.md §DocDB): two intents conflict iff at
 * least one is strong AND one is a read while the other is a write.
 *
 *          WR  WW  SR  SW
 *     WR   -   -   -   X
 *     WW   -   -   X   -
 *     SR   -   X   -   X
 *     SW   X   -   X   -
 *
 * Strong write vs strong write does NOT conflict on its own: snapshot-isolation writers take
 * {SR, SW}, and it is their SR-vs-SW pair that makes two writers of one key conflict, while two
 * serializable blind writers ({SW} each) may both proceed (the later commit wins).
 */
import { assert } from '../../common/assert';
import type { Isolation } from './types';

export const IntentType = {
  WEAK_READ: 1,
  WEAK_WRITE: 2,
  STRONG_READ: 4,
  STRONG_WRITE: 8,
} as const;
export type IntentType = (typeof IntentType)[keyof typeof IntentType];

export const WEAK_READ = IntentType.WEAK_READ;
export const WEAK_WRITE = IntentType.WEAK_WRITE;
export const STRONG_READ = IntentType.STRONG_READ;
export const STRONG_WRITE = IntentType.STRONG_WRITE;

const ALL = WEAK_READ | WEAK_WRITE | STRONG_READ | STRONG_WRITE;
const TYPES: readonly IntentType[] = [WEAK_READ, WEAK_WRITE, STRONG_READ, STRONG_WRITE];

function isStrong(t: IntentType): boolean {
  return t === STRONG_READ || t === STRONG_WRITE;
}
function isRead(t: IntentType): boolean {
  return t === WEAK_READ || t === STRONG_READ;
}

/** The pairwise rule, for single types. */
export function intentTypeConflicts(a: IntentType, b: IntentType): boolean {
  return (isStrong(a) || isStrong(b)) && isRead(a) !== isRead(b);
}

// 16 × 16 table of set-vs-set conflicts, computed once from the pairwise rule (the hot path is
// conflict checking during writes).
const TABLE: Uint8Array = (() => {
  const t = new Uint8Array(16 * 16);
  for (let a = 0; a < 16; a++) {
    for (let b = 0; b < 16; b++) {
      let c = false;
      for (const x of TYPES) for (const y of TYPES) if (a & x && b & y && intentTypeConflicts(x, y)) c = true;
      t[a * 16 + b] = c ? 1 : 0;
    }
  }
  return t;
})();

export function isValidIntentTypeSet(s: number): boolean {
  return Number.isInteger(s) && s > 0 && (s & ~ALL) === 0;
}

/** Do two intent type sets conflict (any member of one against any member of the other)? */
export function intentTypesConflict(a: number, b: number): boolean {
  assert((a & ~ALL) === 0 && (b & ~ALL) === 0, `bad intent type set ${a} / ${b}`);
  return TABLE[a * 16 + b] === 1;
}

/**
 * Intents a write takes: strong on the written key, weak on its ancestors.
 * Snapshot isolation: {SR, SW} / {WR, WW} (the read part makes concurrent writers conflict).
 * Serializable: {SW} / {WW}.
 */
export function intentTypesForWrite(isolation: Isolation, strong: boolean): number {
  if (isolation === 'snapshot') return strong ? STRONG_READ | STRONG_WRITE : WEAK_READ | WEAK_WRITE;
  return strong ? STRONG_WRITE : WEAK_WRITE;
}

/**
 * Intents a read takes. Serializable: {SR} on the key read, {WR} on ancestors. Snapshot isolation
 * reads take none (0): they read a snapshot and never block writers.
 */
export function intentTypesForRead(isolation: Isolation, strong: boolean): number {
  if (isolation === 'snapshot') return 0;
  return strong ? STRONG_READ : WEAK_READ;
}

/** The set's strong part as weak intents (what ancestors of a key get). */
export function weakenIntentTypes(s: number): number {
  let w = s & (WEAK_READ | WEAK_WRITE);
  if (s & STRONG_READ) w |= WEAK_READ;
  if (s & STRONG_WRITE) w |= WEAK_WRITE;
  return w;
}

export function intentTypesToString(s: number): string {
  const names: string[] = [];
  if (s & WEAK_READ) names.push('WR');
  if (s & WEAK_WRITE) names.push('WW');
  if (s & STRONG_READ) names.push('SR');
  if (s & STRONG_WRITE) names.push('SW');
  return `{${names.join(',')}}`;
}
