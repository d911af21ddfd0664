/**
 * A digest of a database's data keys and values, so replicas can be compared byte for byte: after
 * every replica applied the same Raft log, their RegularDBs must hold the same keys, versions (the
 * hybrid time and write id are part of each key) and values. Meta keys (frontier, apply state) sort
 * below the data range and are left out: they may legitimately differ between replicas.
 */
import { createHash } from 'node:crypto';
import type { KvEngine } from './kv-engine';

export interface ContentChecksum {
  /** sha256 over (key length, key, value length, value) of every data entry, in key order. */
  sha256: string;
  entries: number;
  bytes: number;
}

/** Entries hashed per iterator pull before yielding to the event loop (one loop serves every tablet). */
const ENTRIES_PER_YIELD = 4096;

export async function contentChecksum(engine: KvEngine, start: Uint8Array, end: Uint8Array): Promise<ContentChecksum> {
  const h = createHash('sha256');
  const len = Buffer.alloc(4);
  let entries = 0;
  let bytes = 0;
  const it = engine.iterator({ gte: start, lt: end });
  try {
    for (;;) {
      const kv = await it.next();
      if (!kv) break;
      const [k, v] = kv;
      len.writeUInt32BE(k.length);
      h.update(len).update(k);
      len.writeUInt32BE(v.length);
      h.update(len).update(v);
      entries++;
      bytes += k.length + v.length;
      if (entries % ENTRIES_PER_YIELD === 0) await new Promise((r) => setImmediate(r));
    }
  } finally {
    await it.close();
  }
  return { sha256: h.digest('hex'), entries, bytes };
}
