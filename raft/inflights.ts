/**
 * The append messages in flight to one follower (etcd's tracker/inflights.go): a ring buffer of the
 * last index each message carried, plus its bytes. Full means the leader stops pipelining to that
 * follower until acknowledgements free slots — the per-follower flow-control window.
 */
import { assert } from '../common/assert';

export class Inflights {
  private readonly indexes: number[];
  private readonly sizes: number[];
  private start = 0;
  private count = 0;
  private bytes = 0;

  /** `capacity` messages and (when > 0) `bytesMax` bytes may be outstanding at once. */
  constructor(
    private readonly capacity: number,
    private readonly bytesMax = 0,
  ) {
    assert(capacity > 0, 'inflights capacity must be positive');
    this.indexes = new Array<number>(capacity).fill(0);
    this.sizes = new Array<number>(capacity).fill(0);
  }

  /** Record a message whose last entry is `index` (indexes must increase). */
  add(index: number, bytes: number): void {
    assert(!this.full(), 'inflights: add on a full window');
    const at = (this.start + this.count) % this.capacity;
    this.indexes[at] = index;
    this.sizes[at] = bytes;
    this.count++;
    this.bytes += bytes;
  }

  /** Free every message whose last index is <= `index` (an ack covers all before it). */
  freeLE(index: number): void {
    while (this.count > 0 && this.indexes[this.start]! <= index) {
      this.bytes -= this.sizes[this.start]!;
      this.start = (this.start + 1) % this.capacity;
      this.count--;
    }
    if (this.count === 0) this.start = 0;
  }

  /** Free the oldest message (a heartbeat reply proves the follower is alive though acks were lost). */
  freeFirstOne(): void {
    if (this.count === 0) return;
    this.freeLE(this.indexes[this.start]!);
  }

  full(): boolean {
    return this.count === this.capacity || (this.bytesMax > 0 && this.bytes >= this.bytesMax);
  }

  size(): number {
    return this.count;
  }

  reset(): void {
    this.start = 0;
    this.count = 0;
    this.bytes = 0;
  }
}
