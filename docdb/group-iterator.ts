/**
 * Groups consecutive KvIterator entries by DocKey: every stored data key (RegularDB version or
 * IntentsDB intent) starts with its encoded DocKey, and DocKey encodings are prefix-free, so a key
 * that starts with the current group's DocKey bytes belongs to that group.
 */
import type { KvIterator } from './kv-engine';
import { docKeyLength } from './storage-keys';

export interface DocKeyGroup {
  docKeyBuf: Buffer;
  entries: Array<[Buffer, Buffer]>;
}

function buf(u: Uint8Array): Buffer {
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}

/** Entries one group may hold before we consider the row corrupt (bounds memory per row). */
const GROUP_ENTRIES_MAX = 50_000_000;

export class GroupIterator {
  private pending: [Buffer, Buffer] | undefined;
  /** Entries the engine handed over in one batch (KvIterator.nextBatch), not read yet: `batch[batchAt..]`. */
  private batch: Array<[Uint8Array, Uint8Array]> = [];
  private batchAt = 0;
  private done = false;
  private peeked: DocKeyGroup | undefined;

  constructor(private readonly it: KvIterator) {}

  /** The next entry already in hand (one pushed back, or the rest of the engine's last batch). */
  private buffered(): [Buffer, Buffer] | undefined {
    if (this.pending) {
      const p = this.pending;
      this.pending = undefined;
      return p;
    }
    if (this.batchAt < this.batch.length) {
      const e = this.batch[this.batchAt++]!;
      return [buf(e[0]), buf(e[1])];
    }
    return undefined;
  }

  /** The next entry from the engine, once nothing is in hand (buffered() gave undefined). */
  private async fetch(): Promise<[Buffer, Buffer] | undefined> {
    if (this.done) return undefined;
    let e: [Uint8Array, Uint8Array] | undefined;
    if (this.it.nextBatch) {
      const batch = await this.it.nextBatch();
      this.batch = batch ?? [];
      this.batchAt = batch ? 1 : 0;
      e = batch?.[0];
    } else e = await this.it.next();
    if (e === undefined) {
      this.done = true;
      return undefined;
    }
    return [buf(e[0]), buf(e[1])];
  }

  async peek(): Promise<DocKeyGroup | undefined> {
    if (this.peeked === undefined) this.peeked = await this.read();
    return this.peeked;
  }

  async next(): Promise<DocKeyGroup | undefined> {
    const g = await this.peek();
    this.peeked = undefined;
    return g;
  }

  private async read(): Promise<DocKeyGroup | undefined> {
    const first = this.buffered() ?? (await this.fetch());
    if (first === undefined) return undefined;
    const docKeyBuf = first[0].subarray(0, docKeyLength(first[0]));
    const entries: Array<[Buffer, Buffer]> = [first];
    for (let i = 0; i < GROUP_ENTRIES_MAX; i++) {
      // In hand without an await: no promise and microtask per entry of a long scan.
      const e = this.buffered() ?? (await this.fetch());
      if (e === undefined) break;
      if (e[0].length > docKeyBuf.length && e[0].subarray(0, docKeyBuf.length).equals(docKeyBuf)) entries.push(e);
      else {
        this.pending = e;
        break;
      }
    }
    return { docKeyBuf, entries };
  }

  /** Reposition at the first group whose keys are >= target (a filter's seek hint). */
  seek(target: Uint8Array): void {
    this.it.seek(target);
    this.pending = undefined;
    this.batch = [];
    this.batchAt = 0;
    this.peeked = undefined;
    this.done = false;
  }

  close(): Promise<void> {
    return this.it.close();
  }
}
