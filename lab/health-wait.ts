/**
 * Waiting for servers to come up, with a failure report a person can act on: which node and server
 * did not come up, why (exited with a status, or never answered) and the tail of its log.
 */
import { DbError, ErrorCode } from '../common';
import type { NodeName, ServerRole } from './cluster-spec';
import { getJson, isHealthy } from './console-http';
import { sleep } from './wait-until';

export const HEALTH_POLL_INTERVAL_MS = 200;
export const FAILURE_LOG_LINES = 25;

export interface HealthTarget {
  node: NodeName;
  role: ServerRole;
  webUrl: string;
  /** How to ask whether it is healthy (default: its /api/v1/healthz at webUrl answers 200). */
  healthy?: () => Promise<boolean>;
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
        if (await (t.healthy ? t.healthy() : isHealthy(t.webUrl))) pending.delete(t);
      }),
    );
    if (pending.size === 0) return;
    for (const t of pending) {
      const why = t.gone ? await t.gone() : undefined;
      if (why !== undefined) throw await notUp(t, why, ErrorCode.SERVER_EXITED);
    }
    if (Date.now() >= deadline) {
      const first = [...pending][0]!;
      throw await notUp(first, `did not answer ${first.webUrl}/api/v1/healthz within ${timeoutMs} ms`, ErrorCode.TIMED_OUT, pending.size);
    }
    await sleep(HEALTH_POLL_INTERVAL_MS);
  }
}

/** SERVER_EXITED for a server known to be gone, TIMED_OUT for one that never answered; both with its log's tail. */
async function notUp(t: HealthTarget, why: string, code: ErrorCode, pendingCount = 1): Promise<DbError> {
  let tail: string[];
  try {
    tail = await t.logTail(FAILURE_LOG_LINES);
  } catch (e) {
    tail = [`(log not readable: ${(e as Error).message})`];
  }
  const others = pendingCount > 1 ? ` (and ${pendingCount - 1} more server(s) not healthy)` : '';
  const msg = `node ${t.node} ${t.role} ${why}${others}\n--- last ${tail.length} log lines of ${t.node} ${t.role} ---\n${tail.join('\n')}`;
  return new DbError(code, msg, { node: t.node, role: t.role });
}

/** What the masters said while the cluster was not yet ready (the timeout error names it). */
export interface ReadinessProbe {
  /** A master answered as the leader with this many tablet servers alive (of `tservers`). */
  aliveTservers?: number;
  /** The RPC addresses of those tablet servers, as the leader names them. */
  aliveAddresses?: string[];
  /** No master answered as the leader (all followers, or no answer). */
  noLeader?: boolean;
}

/**
 * Healthy servers are not yet a usable cluster: the masters elect a leader and every tablet server
 * registers with it by heartbeat, a second or two later. Waits until one of `masterWebUrls` answers
 * /api/v1/tablet-servers (only the leader does) with at least `tservers` alive, so a command run right
 * after `lab up` does not start by retrying; TIMED_OUT with what was missing otherwise.
 */
export async function waitClusterReady(masterWebUrls: readonly string[], tservers: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: ReadinessProbe = { noLeader: true };
  for (;;) {
    last = await probeReadiness(masterWebUrls);
    if (last.aliveTservers !== undefined && last.aliveTservers >= tservers) return;
    if (Date.now() >= deadline) {
      const why = last.aliveTservers === undefined ? 'no master answered as the leader' : `the master leader sees ${last.aliveTservers} of ${tservers} tablet server(s) alive`;
      throw new DbError(ErrorCode.TIMED_OUT, `the cluster was not ready within ${timeoutMs} ms: ${why}`, { tservers, aliveTservers: last.aliveTservers ?? null });
    }
    await sleep(HEALTH_POLL_INTERVAL_MS);
  }
}

/** Asks every master for /api/v1/tablet-servers; the leader's answer (followers say NOT_THE_LEADER) tells who is alive. */
export async function probeReadiness(masterWebUrls: readonly string[]): Promise<ReadinessProbe> {
  const answers = await Promise.all(
    masterWebUrls.map(async (u) => {
      try {
        const b = (await getJson(`${u}/api/v1/tablet-servers`, 1_000)) as { tabletServers?: Array<{ alive?: boolean; rpcAddress?: string }> };
        return Array.isArray(b.tabletServers) ? b.tabletServers.filter((t) => t.alive === true).map((t) => String(t.rpcAddress ?? '')) : undefined;
      } catch {
        return undefined; // a follower (NOT_THE_LEADER) or not answering yet
      }
    }),
  );
  let best: string[] | undefined;
  for (const a of answers) if (a && (!best || a.length > best.length)) best = a;
  return best ? { aliveTservers: best.length, aliveAddresses: best } : { noLeader: true };
}
