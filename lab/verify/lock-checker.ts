/**
 * Lock: mutual exclusion of row locks, checked with their fencing tokens (docs/rows.md). Every
 * holder appends "token:step," entries to its locked row's log, each append carrying the lock; the
 * final log of each row must show:
 * - tokens never going down ("fencing-violated": a write of an older holder landed after a newer
 *   holder's — two holders' writes interleaved);
 * - every acknowledged append exactly once ("lost-write", "duplicate-write");
 * - nothing that was never attempted or that was refused ("unexpected").
 * Appends that ended unknown may or may not appear.
 */
import { pairCalls, type HistoryOp } from './history';

export interface LockResult {
  valid: boolean;
  anomalies: Record<string, number>;
  grants: number;
  okWrites: number;
  refused: number;
  finalReads: number;
  lost: number;
  details: string[];
}

export function lockEntry(token: bigint | number, step: number): string {
  return `${token}:${step}`;
}

export function checkLocks(history: readonly HistoryOp[]): LockResult {
  const r: LockResult = { valid: true, anomalies: {}, grants: 0, okWrites: 0, refused: 0, finalReads: 0, lost: 0, details: [] };
  const flag = (name: string, line: string, n = 1): void => {
    r.anomalies[name] = (r.anomalies[name] ?? 0) + n;
    if (r.details.length < 20) r.details.push(line);
  };
  const keys = new Map<string, { ok: Set<string>; maybe: Set<string>; final?: string }>();
  const of = (k: string): { ok: Set<string>; maybe: Set<string>; final?: string } => {
    let v = keys.get(k);
    if (!v) keys.set(k, (v = { ok: new Set(), maybe: new Set() }));
    return v;
  };
  for (const c of pairCalls(history)) {
    const k = of(c.key ?? '');
    if (c.f === 'lock' && c.type === 'ok') r.grants++;
    if (c.f === 'write') {
      const e = String(c.invokeValue);
      if (c.type === 'ok') {
        k.ok.add(e);
        r.okWrites++;
      } else if (c.type === 'info') k.maybe.add(e);
      else r.refused++;
    }
    if (c.f === 'final-read' && c.type === 'ok') {
      k.final = String(c.value ?? '');
      r.finalReads++;
    }
  }
  for (const [key, k] of keys) {
    if (k.final === undefined) {
      flag('no-final-read', `row ${key}: no final read`);
      continue;
    }
    const entries = k.final.split(',').filter(Boolean);
    const count = new Map<string, number>();
    let lastToken = -1n;
    for (const e of entries) {
      count.set(e, (count.get(e) ?? 0) + 1);
      const token = BigInt(e.split(':')[0] ?? '0');
      if (token < lastToken) flag('fencing-violated', `row ${key}: ${e} (token ${token}) after token ${lastToken}`);
      if (token > lastToken) lastToken = token;
      if (!k.ok.has(e) && !k.maybe.has(e)) flag('unexpected', `row ${key}: ${e} was never attempted, or was refused`);
    }
    for (const [e, n] of count) if (n > 1) flag('duplicate-write', `row ${key}: ${e} appears ${n} times`);
    for (const e of k.ok) {
      if (!count.has(e)) {
        flag('lost-write', `row ${key}: acknowledged ${e} is missing`);
        r.lost++;
      }
    }
  }
  r.valid = Object.keys(r.anomalies).length === 0 && keys.size > 0;
  return r;
}
