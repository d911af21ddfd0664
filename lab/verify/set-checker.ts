/**
 * Set: unique elements are added; a final read must contain every acknowledged add ("lost" otherwise)
 * and nothing that was never attempted ("unexpected"). Adds that ended `info` may or may not appear
 * ("recovered" when they do).
 */
import type { HistoryOp } from './history';
import { pairCalls } from './history';

export interface SetResult {
  valid: boolean;
  attempted: number;
  acknowledged: number;
  lost: unknown[];
  unexpected: unknown[];
  recovered: number;
  finalReads: number;
}

export function checkSet(history: readonly HistoryOp[]): SetResult {
  const calls = pairCalls(history);
  const attempted = new Set<string>();
  const acked = new Set<string>();
  const infoAdds = new Set<string>();
  let finalRead: unknown[] | undefined;
  let finalReads = 0;
  for (const c of calls) {
    if (c.f === 'add') {
      const k = JSON.stringify(c.invokeValue);
      attempted.add(k);
      if (c.type === 'ok') acked.add(k);
      if (c.type === 'info') infoAdds.add(k);
    } else if (c.f === 'read' && c.type === 'ok') {
      finalRead = c.value as unknown[];
      finalReads++;
    }
  }
  if (!finalRead) return { valid: false, attempted: attempted.size, acknowledged: acked.size, lost: [], unexpected: [], recovered: 0, finalReads: 0 };
  const seen = new Set(finalRead.map((v) => JSON.stringify(v)));
  const lost = [...acked].filter((k) => !seen.has(k)).map((k) => JSON.parse(k) as unknown);
  const unexpected = [...seen].filter((k) => !attempted.has(k)).map((k) => JSON.parse(k) as unknown);
  const recovered = [...infoAdds].filter((k) => seen.has(k)).length;
  return { valid: lost.length === 0 && unexpected.length === 0, attempted: attempted.size, acknowledged: acked.size, lost, unexpected, recovered, finalReads };
}
