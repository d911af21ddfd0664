/**
 * Waiting for servers to come up, with a failure report a person can act on: which node and server
 * did not come up, why (exited with a status, or never answered) and the tail of its log.
 */
import { DbError, ErrorCode } from '../common';
import type { NodeName, ServerRole } from './cluster-spec';
import { isHealthy } from './console-http';
import { sleep } from './wait-until';

export const HEALTH_POLL_INTERVAL_MS = 200;
export const FAILURE_LOG_LINES = 25;

export interface HealthTarget {
  node: NodeName;
  role: ServerRole;
  webUrl: string;
  /** A reason text once the server is known to be gone (exited, container died); undefined while it may still come up. */
  gone?: () => Promise<string | undefined>;
  logTail: (lines: number) => Promise<string[]>;
}

export async function waitAllHealthy(targets: readonly HealthTarget[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const pending = new Set(targets);
  for (;;) {
    await Promise.all(
      [...pending].map(async (t) => {
        if (await isHealthy(t.webUrl)) pending.delete(t);
      }),
    );
    if (pending.size === 0) return;
    for (const t of pending) {
      const why = t.gone ? await t.gone() : undefined;
      if (why !== undefined) throw await notUp(t, why);
    }
    if (Date.now() >= deadline) {
      const first = [...pending][0]!;
      throw await notUp(first, `did not answer ${first.webUrl}/api/v1/healthz within ${timeoutMs} ms`, pending.size);
    }
    await sleep(HEALTH_POLL_INTERVAL_MS);
  }
}

async function notUp(t: HealthTarget, why: string, pendingCount = 1): Promise<DbError> {
  let tail: string[];
  try {
    tail = await t.logTail(FAILURE_LOG_LINES);
  } catch (e) {
    tail = [`(log not readable: ${(e as Error).message})`];
  }
  const others = pendingCount > 1 ? ` (and ${pendingCount - 1} more server(s) not healthy)` : '';
  const msg = `node ${t.node} ${t.role} ${why}${others}\n--- last ${tail.length} log lines of ${t.node} ${t.role} ---\n${tail.join('\n')}`;
  return new DbError(ErrorCode.TIMED_OUT, msg, { node: t.node, role: t.role });
}
