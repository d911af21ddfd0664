/**
 * Source side of remote bootstrap: a session holds one iterator per database of a tablet, opened
 * together, so the copy is a consistent image of each database (RocksDB and the memory engine give
 * iterators a snapshot). The follower pulls chunks of at most `bytesMax` bytes (FetchSnapshotChunk)
 * until `done`; the image includes each database's frontier key, so after loading it the follower's
 * apply skips exactly the entries the image already holds (replay is idempotent anyway).
 *
 * Bounded: at most SNAPSHOT_SESSIONS_MAX sessions; idle sessions close after SNAPSHOT_SESSION_IDLE_MS.
 */
import { DbError, ErrorCode } from '../../common/errors';
import { newId } from '../../common/ids';
import type { KvEngine, KvIterator } from '../../docdb';
import type { DbName } from './tablet-peer';

export const SNAPSHOT_SESSIONS_MAX = 16;
export const SNAPSHOT_SESSION_IDLE_MS = 60_000;

interface Session {
  tabletId: string;
  iters: Array<{ db: DbName; it: KvIterator }>;
  current: number;
  lastUsedMs: number;
  busy: boolean;
}

export interface SnapshotChunk {
  sessionId: string;
  db: DbName;
  pairs: Array<[Uint8Array, Uint8Array]>;
  done: boolean;
}

export class SnapshotSessions {
  private readonly sessions = new Map<string, Session>();

  open(tabletId: string, engines: { regular: KvEngine; intents: KvEngine }): string {
    this.expire();
    if (this.sessions.size >= SNAPSHOT_SESSIONS_MAX) throw new DbError(ErrorCode.BACKPRESSURE, `${this.sessions.size} remote bootstrap sessions open`);
    const id = newId();
    this.sessions.set(id, {
      tabletId,
      iters: [
        { db: 'regular', it: engines.regular.iterator() },
        { db: 'intents', it: engines.intents.iterator() },
      ],
      current: 0,
      lastUsedMs: performance.now(),
      busy: false,
    });
    return id;
  }

  async next(sessionId: string, tabletId: string, bytesMax: number): Promise<SnapshotChunk> {
    const s = this.sessions.get(sessionId);
    if (!s || s.tabletId !== tabletId) throw new DbError(ErrorCode.NOT_FOUND, `remote bootstrap session ${sessionId} not found (expired?)`);
    if (s.busy) throw new DbError(ErrorCode.INVALID_ARGUMENT, `remote bootstrap session ${sessionId} is already serving a chunk`);
    s.busy = true;
    try {
      s.lastUsedMs = performance.now();
      const cur = s.iters[s.current]!;
      const pairs: Array<[Uint8Array, Uint8Array]> = [];
      let bytes = 0;
      // One chunk holds one database's pairs only; `done` says the whole image was sent.
      while (bytes < bytesMax) {
        const kv = await cur.it.next();
        if (!kv) {
          await cur.it.close();
          s.current++;
          break;
        }
        pairs.push(kv);
        bytes += kv[0].byteLength + kv[1].byteLength + 8;
      }
      const done = s.current >= s.iters.length;
      if (done) this.sessions.delete(sessionId);
      return { sessionId, db: cur.db, pairs, done };
    } finally {
      s.busy = false;
    }
  }

  expire(): void {
    const now = performance.now();
    for (const [id, s] of this.sessions) {
      if (now - s.lastUsedMs < SNAPSHOT_SESSION_IDLE_MS || s.busy) continue;
      this.sessions.delete(id);
      for (const { it } of s.iters.slice(s.current)) void it.close().catch(() => undefined);
    }
  }

  async closeAll(): Promise<void> {
    for (const s of this.sessions.values()) for (const { it } of s.iters.slice(s.current)) await it.close().catch(() => undefined);
    this.sessions.clear();
  }
}
