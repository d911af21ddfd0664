/**
 * Retryable requests (YugabyteDB's RetryableRequests): what lets a client resend a write whose
 * answer it never got — a paused or deposed leader, a lost connection, an attempt that outlived its
 * per-attempt timeout — without the write happening twice. An INSERT done twice answers
 * ALREADY_EXISTS to a write that succeeded; a transactional write done twice takes its locks and
 * existence checks against its own intents.
 *
 * Every attempt of one write carries the same (client id, request id). Each replica remembers the
 * requests whose entries it applied (with the entry's hybrid time), per client, and forgets the ids
 * below the client's lowest still-unanswered request (min_running, which the client sends along) and
 * clients silent for retryable_request_timeout_secs. The leader also knows the requests it is
 * running (from the first check to the proposal's outcome). A write arriving at the leader is then:
 * - replicated here already: answered with its first answer's hybrid time, nothing done again;
 * - running here: answered when the running copy is (same result);
 * - below its client's min_running: STALE_REQUEST (a late copy of an attempt the client gave up on);
 * - otherwise new: run.
 * A new leader has applied every entry of earlier terms before it serves (leader readiness), so a
 * write the old leader replicated is "replicated here" on it too.
 *
 * Restarts: the databases' frontier lets a restarted replica skip replaying what they hold, so the
 * table is saved in the tablet's directory before each log GC (retryable.json) and rebuilt at start
 * from that file plus the log entries it still has; a remote bootstrap carries the source's table.
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { HybridTime } from '../../common/hybrid-time';
import type { RequestTag } from './tablet-op';

interface ClientRequests {
  /** Ids below this are forgotten: the client waits for none of them. */
  minRunning: number;
  /** Replicated request id → the entry's hybrid time (ids below minRunning may linger until the next trim). */
  done: Map<number, HybridTime>;
  /** Trim `done` when it grows past this (amortized: not on every apply). */
  trimAt: number;
  /** Date.now() of the last entry of this client applied here. */
  lastMs: number;
}

export type RequestCheck = { kind: 'new' } | { kind: 'replicated'; ht: HybridTime } | { kind: 'running'; result: Promise<HybridTime> };

/** What retryable.json and a snapshot descriptor hold: per client, min_running and the replicated ids. */
export interface RetryableImage {
  clients: Array<{ clientId: string; minRunning: number; done: Array<[number, string]> }>;
}

/** A client's remembered ids are trimmed below min_running once there are more than this (and then at twice what is left). */
const TRIM_AT_MIN = 64;

/** Client ids longer than this are refused (INVALID_ARGUMENT): they are kept in memory and in entries. */
export const CLIENT_ID_MAX_BYTES = 64;

export class RetryableRequests {
  private readonly clients = new Map<string, ClientRequests>();
  private readonly running = new Map<string, Promise<HybridTime>>();
  readonly metrics = { duplicates: 0, stale: 0 };

  constructor(private readonly now: () => number = Date.now) {}

  /** Leader, before running `r`: is it a copy of a request replicated or running here? */
  check(r: RequestTag, tabletId: string): RequestCheck {
    const ht = this.replicatedAt(r, tabletId);
    if (ht !== undefined) return { kind: 'replicated', ht };
    const result = this.running.get(key(r));
    if (result) {
      this.metrics.duplicates++;
      return { kind: 'running', result };
    }
    return { kind: 'new' };
  }

  /** The hybrid time of `r`'s entry when it was replicated here (a copy), else undefined; STALE_REQUEST for a late copy. */
  replicatedAt(r: RequestTag, tabletId: string): HybridTime | undefined {
    const c = this.clients.get(r.clientId);
    if (c && r.requestId < c.minRunning) {
      this.metrics.stale++;
      throw new DbError(ErrorCode.STALE_REQUEST, `tablet ${tabletId}: request ${r.requestId} of client ${r.clientId} is below the lowest one it still waits for (${c.minRunning}): a late copy, not run`, { clientId: r.clientId, requestId: r.requestId, minRunning: c.minRunning });
    }
    const ht = c?.done.get(r.requestId);
    if (ht !== undefined) this.metrics.duplicates++;
    return ht;
  }

  /** Leader: `r` runs here until `result` settles (a copy arriving meanwhile waits for it). */
  start(r: RequestTag, result: Promise<HybridTime>): void {
    const k = key(r);
    this.running.set(k, result);
    const end = (): void => {
      if (this.running.get(k) === result) this.running.delete(k);
    };
    result.then(end, end);
  }

  /** Every replica, after applying the entry of `r` at `ht`. */
  replicated(r: RequestTag, ht: HybridTime): void {
    const c = this.client(r.clientId);
    c.lastMs = this.now();
    if (r.minRunning > c.minRunning) c.minRunning = r.minRunning;
    // An entry of a request the client already gave up on: nobody will resend it.
    if (r.requestId >= c.minRunning) c.done.set(r.requestId, ht);
    if (c.done.size > c.trimAt) trim(c);
  }

  private client(clientId: string): ClientRequests {
    let c = this.clients.get(clientId);
    if (!c) this.clients.set(clientId, (c = { minRunning: 0, done: new Map(), lastMs: this.now(), trimAt: TRIM_AT_MIN }));
    return c;
  }

  /** Forget clients with no entry applied here for `retentionMs` (they stopped, or crashed). */
  expire(retentionMs: number): number {
    const before = this.now() - retentionMs;
    let n = 0;
    for (const [id, c] of this.clients) {
      if (c.lastMs < before) {
        this.clients.delete(id);
        n++;
      }
    }
    return n;
  }

  /** Sizes for the console. */
  stats(): { clients: number; replicated: number; running: number; duplicates: number; stale: number } {
    let replicated = 0;
    for (const c of this.clients.values()) for (const id of c.done.keys()) if (id >= c.minRunning) replicated++;
    return { clients: this.clients.size, replicated, running: this.running.size, ...this.metrics };
  }

  image(): RetryableImage {
    return {
      clients: [...this.clients].map(([clientId, c]) => {
        trim(c);
        return { clientId, minRunning: c.minRunning, done: [...c.done].map(([id, ht]): [number, string] => [id, ht.toString()]) };
      }),
    };
  }

  /** Add what an image holds (start, remote bootstrap); what this table already knows stays. */
  restore(img: RetryableImage): void {
    const now = this.now();
    for (const x of img.clients) {
      const c = this.client(x.clientId);
      c.lastMs = Math.max(c.lastMs, now);
      if (x.minRunning > c.minRunning) c.minRunning = x.minRunning;
      for (const [id, ht] of x.done) if (id >= c.minRunning) c.done.set(id, BigInt(ht));
      trim(c);
    }
  }
}

function trim(c: ClientRequests): void {
  for (const id of c.done.keys()) if (id < c.minRunning) c.done.delete(id);
  c.trimAt = Math.max(TRIM_AT_MIN, 2 * c.done.size);
}

function key(r: RequestTag): string {
  return `${r.clientId}/${r.requestId}`;
}

/** An image read from disk or a descriptor (untrusted shape): CORRUPTION when it is not one. */
export function parseRetryableImage(v: unknown): RetryableImage {
  const bad = (why: string): DbError => new DbError(ErrorCode.CORRUPTION, `retryable requests image: ${why}`);
  if (typeof v !== 'object' || v === null || !Array.isArray((v as { clients?: unknown }).clients)) throw bad('no clients list');
  const clients: RetryableImage['clients'] = [];
  for (const c of (v as { clients: unknown[] }).clients) {
    const x = c as { clientId?: unknown; minRunning?: unknown; done?: unknown };
    if (typeof x.clientId !== 'string' || !Number.isSafeInteger(x.minRunning) || !Array.isArray(x.done)) throw bad('bad client entry');
    const done: Array<[number, string]> = [];
    for (const d of x.done as unknown[]) {
      if (!Array.isArray(d) || !Number.isSafeInteger(d[0]) || typeof d[1] !== 'string' || !/^\d+$/.test(d[1])) throw bad('bad request entry');
      done.push([d[0] as number, d[1]]);
    }
    clients.push({ clientId: x.clientId, minRunning: x.minRunning as number, done });
  }
  return { clients };
}
