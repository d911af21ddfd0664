/**
 * The recent history of each tablet replica's database sizes on this tserver: IntentsDB and
 * RegularDB memtable and SST bytes and the intents held, one sample per memory-tracker pass (every
 * second). The master's /apply-timeline reads it from every tserver (GET /api/v1/size-history), so a
 * person opening the page after a commit still sees the minutes before it.
 *
 * Bounded: SIZE_HISTORY_SAMPLES_MAX samples per replica (10 minutes at one a second); a replica
 * that leaves the server leaves the history at the next sample.
 */

export const SIZE_HISTORY_SAMPLES_MAX = 600;

/** One sample: [ms since the epoch, IntentsDB memtable, IntentsDB SST, RegularDB memtable, RegularDB SST, intents]. */
export type SizeSample = [number, number, number, number, number, number];

export interface ReplicaSizes {
  regulardb: { memtableBytes: number; sstBytes: number };
  intentsdb: { memtableBytes: number; sstBytes: number; intentCount: number };
}

export interface SizeHistoryJson {
  uuid: string;
  rpcAddress: string;
  /** The lab's name of this node (lab_node_name), '' outside a lab. */
  nodeName: string;
  /** The order of a sample's fields. */
  fields: ['atMs', 'intentsMemtableBytes', 'intentsSstBytes', 'regularMemtableBytes', 'regularSstBytes', 'intents'];
  tablets: Array<{ tabletId: string; table: string; role: string; samples: SizeSample[] }>;
}

interface Track {
  table: string;
  role: string;
  samples: SizeSample[];
}

export class TabletSizeHistory {
  private readonly byTablet = new Map<string, Track>();

  /** Adds one sample of every live replica and forgets replicas no longer in `live`. */
  record(atMs: number, live: ReadonlyArray<{ tabletId: string; table: string; role: string; sizes: ReplicaSizes }>): void {
    const ids = new Set<string>();
    for (const r of live) {
      ids.add(r.tabletId);
      const t = this.byTablet.get(r.tabletId) ?? { table: r.table, role: r.role, samples: [] };
      t.role = r.role;
      t.samples.push([atMs, r.sizes.intentsdb.memtableBytes, r.sizes.intentsdb.sstBytes, r.sizes.regulardb.memtableBytes, r.sizes.regulardb.sstBytes, r.sizes.intentsdb.intentCount]);
      if (t.samples.length > SIZE_HISTORY_SAMPLES_MAX) t.samples.splice(0, t.samples.length - SIZE_HISTORY_SAMPLES_MAX);
      this.byTablet.set(r.tabletId, t);
    }
    for (const id of [...this.byTablet.keys()]) if (!ids.has(id)) this.byTablet.delete(id);
  }

  /** The samples at or after `sinceMs` of the replicas of `table` (every table when undefined). */
  json(self: { uuid: string; rpcAddress: string; nodeName: string }, table: string | undefined, sinceMs: number): SizeHistoryJson {
    const tablets: SizeHistoryJson['tablets'] = [];
    for (const [tabletId, t] of [...this.byTablet.entries()].sort(([a], [b]) => a.localeCompare(b))) {
      if (table !== undefined && t.table !== table) continue;
      tablets.push({ tabletId, table: t.table, role: t.role, samples: t.samples.filter((s) => s[0] >= sinceMs) });
    }
    return { ...self, fields: ['atMs', 'intentsMemtableBytes', 'intentsSstBytes', 'regularMemtableBytes', 'regularSstBytes', 'intents'], tablets };
  }
}
