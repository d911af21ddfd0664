/**
 * Tablets and leaders per tserver, read from a master's /api/v1/tablet-servers (docs/architecture.md §Contracts) for
 * `lab status`. Best effort: a lab of fake nodes or a master that is down just yields no counts.
 */
import { getJson } from './console-http';

export interface TabletCount {
  tablets: number;
  leaders: number;
}

/** Keyed by the tserver's rpcAddress as the master reports it. */
export async function tabletCountsFromMasters(masterWebUrls: readonly string[]): Promise<Map<string, TabletCount>> {
  for (const url of masterWebUrls) {
    try {
      const body = await getJson(`${url}/api/v1/tablet-servers`, 1_500);
      const list = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)['tabletServers'] : undefined;
      if (!Array.isArray(list)) continue;
      const out = new Map<string, TabletCount>();
      for (const item of list as unknown[]) {
        if (typeof item !== 'object' || item === null) continue;
        const o = item as Record<string, unknown>;
        if (typeof o['rpcAddress'] !== 'string') continue;
        out.set(o['rpcAddress'], { tablets: Number(o['tablets'] ?? 0), leaders: Number(o['leaders'] ?? 0) });
      }
      return out;
    } catch {
      // try the next master (a follower may be down or partitioned)
    }
  }
  return new Map();
}
