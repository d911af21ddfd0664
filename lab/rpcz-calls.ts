/**
 * Calls in flight per server for `lab status`, read from each running server's /api/v1/rpcz (both
 * ways, and the age of the oldest): a server that calls pile up on — a slow disk, a paused peer it
 * waits for — stands out in the table. Best effort: a server that does not answer in time gets none.
 */
import type { CallsInFlight, ServerStatus } from './cluster-driver';
import { getJson } from './console-http';

const RPCZ_TIMEOUT_MS = 1_500;

export type { CallsInFlight } from './cluster-driver';

interface RpczSide {
  callsInFlight?: unknown;
  inFlight?: Array<{ elapsedMs?: unknown }>;
}

function sideOf(conns: unknown): { calls: number; oldestMs: number } {
  let calls = 0;
  let oldestMs = 0;
  if (!Array.isArray(conns)) return { calls, oldestMs };
  for (const c of conns as RpczSide[]) {
    calls += typeof c.callsInFlight === 'number' ? c.callsInFlight : 0;
    for (const k of c.inFlight ?? []) if (typeof k.elapsedMs === 'number' && k.elapsedMs > oldestMs) oldestMs = k.elapsedMs;
  }
  return { calls, oldestMs };
}

/** One server's calls in flight, or undefined when its console does not answer /api/v1/rpcz. */
export async function callsInFlight(webUrl: string): Promise<CallsInFlight | undefined> {
  try {
    const z = (await getJson(`${webUrl}/api/v1/rpcz`, RPCZ_TIMEOUT_MS)) as { inbound?: unknown; outbound?: unknown };
    const i = sideOf(z.inbound);
    const o = sideOf(z.outbound);
    return { inbound: i.calls, outbound: o.calls, oldestMs: Math.max(i.oldestMs, o.oldestMs) };
  } catch {
    return undefined;
  }
}

/** Fill `calls` of every healthy server (in parallel). */
export async function addCallsInFlight(servers: readonly ServerStatus[]): Promise<void> {
  await Promise.all(
    servers
      .filter((s) => s.healthy)
      .map(async (s) => {
        const c = await callsInFlight(s.webUrl);
        if (c) s.calls = c;
      }),
  );
}

/** The status table's cell: "in/out", and the oldest call's age once it passes a second. */
export function callsCell(c: CallsInFlight | undefined): string | undefined {
  if (!c) return undefined;
  return `${c.inbound}/${c.outbound}${c.oldestMs >= 1000 ? ` (oldest ${(c.oldestMs / 1000).toFixed(1)} s)` : ''}`;
}
