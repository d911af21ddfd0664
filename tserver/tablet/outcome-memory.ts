/**
 * The outcomes (APPLY_TXN: committed at a time, REMOVE_TXN: aborted) one replica remembers for status
 * resolution: a status tablet forgets a committed transaction once every participant leader applied
 * it and then answers ABORTED for it, so a reader that met the intents just before they were applied
 * must find the truth here (TxnParticipant.settleRemote).
 *
 * Bounded: beyond `max` entries the oldest is evicted only once it is `keepMs` old (a reader that met
 * the intents before the apply may still be asking), and always beyond `hardMax`. Remembering a
 * transaction again makes it the newest.
 *
 * Kept in a ring of typed arrays (status, commit time, priority, time) indexed from a Map of ids: an
 * outcome lives for a minute under load, so whatever objects it holds outlive the young generation
 * and are copied and promoted; here an outcome is its id string and a Map slot, not three objects.
 * (Measured: 0.7 µs per remember() at 21,600 outcomes, against 2–4 µs for a Map of objects; what a
 * tserver promotes per scavenge under load did not change measurably — that is mostly intents and
 * Raft log entries waiting to be applied or evicted.)
 */
import type { TxnId } from '../../common/ids';
import type { TxnStatusInfo } from './participant/txn-env';

export interface OutcomeLimits {
  max: number;
  hardMax: number;
  keepMs: number;
}

export const OUTCOME_LIMITS: OutcomeLimits = { max: 10_000, hardMax: 200_000, keepMs: 60_000 };

const STATUS_CODES = { COMMITTED: 1, ABORTED: 2, PENDING: 3 } as const;
const INITIAL_SLOTS = 1024;

export class OutcomeMemory {
  /** Id → its slot in the ring (an id's older slots are dead: the Map no longer points at them). */
  private readonly slotOf = new Map<TxnId, number>();
  /**
   * The ring, oldest first from `head`, `used` slots long (live and dead ones). The oldest live
   * outcome is found here, not by iterating the Map from its start: V8's Map keeps the slots of
   * deleted entries until it rehashes, so after many evictions such an iteration walks every dead
   * slot first — tens of microseconds per call at 10,000 outcomes.
   */
  private ids: Array<TxnId | undefined> = new Array<TxnId | undefined>(INITIAL_SLOTS);
  private status = new Uint8Array(INITIAL_SLOTS);
  private commitHt = new BigInt64Array(INITIAL_SLOTS);
  private priority = new Float64Array(INITIAL_SLOTS);
  private atMs = new Float64Array(INITIAL_SLOTS);
  private head = 0;
  private used = 0;

  constructor(
    private readonly limits: OutcomeLimits = OUTCOME_LIMITS,
    private readonly nowMs: () => number = () => performance.now(),
  ) {}

  get size(): number {
    return this.slotOf.size;
  }

  get(txnId: TxnId): TxnStatusInfo | undefined {
    const i = this.slotOf.get(txnId);
    if (i === undefined) return undefined;
    const priority = this.priority[i]!;
    switch (this.status[i]) {
      case STATUS_CODES.COMMITTED:
        return { status: 'COMMITTED', commitHt: BigInt.asUintN(64, this.commitHt[i]!), priority };
      case STATUS_CODES.ABORTED:
        return { status: 'ABORTED', priority };
      default:
        return { status: 'PENDING', priority };
    }
  }

  remember(txnId: TxnId, o: TxnStatusInfo): void {
    const now = this.nowMs();
    if (this.used === this.ids.length) this.makeRoom();
    const i = (this.head + this.used) % this.ids.length;
    this.used++;
    this.ids[i] = txnId;
    this.status[i] = STATUS_CODES[o.status];
    this.commitHt[i] = o.status === 'COMMITTED' ? BigInt.asIntN(64, o.commitHt) : 0n;
    this.priority[i] = o.priority;
    this.atMs[i] = now;
    this.slotOf.set(txnId, i); // an older slot of the same id is dead from now on
    const { max, hardMax, keepMs } = this.limits;
    while (this.used > 0) {
      const h = this.head;
      const id = this.ids[h]!;
      const live = this.slotOf.get(id) === h;
      if (live) {
        if (this.slotOf.size <= max) break;
        if (this.slotOf.size <= hardMax && now - this.atMs[h]! < keepMs) break;
        this.slotOf.delete(id);
      }
      this.ids[h] = undefined;
      this.head = (h + 1) % this.ids.length;
      this.used--;
    }
  }

  /** The ring is full: copy its live slots, oldest first, into arrays with room to spare. */
  private makeRoom(): void {
    const cap = this.ids.length;
    const live = this.slotOf.size;
    const nextCap = live * 2 > cap ? cap * 2 : cap;
    const ids = new Array<TxnId | undefined>(nextCap);
    const status = new Uint8Array(nextCap);
    const commitHt = new BigInt64Array(nextCap);
    const priority = new Float64Array(nextCap);
    const atMs = new Float64Array(nextCap);
    let n = 0;
    for (let k = 0; k < this.used; k++) {
      const i = (this.head + k) % cap;
      const id = this.ids[i]!;
      if (this.slotOf.get(id) !== i) continue;
      ids[n] = id;
      status[n] = this.status[i]!;
      commitHt[n] = this.commitHt[i]!;
      priority[n] = this.priority[i]!;
      atMs[n] = this.atMs[i]!;
      this.slotOf.set(id, n);
      n++;
    }
    this.ids = ids;
    this.status = status;
    this.commitHt = commitHt;
    this.priority = priority;
    this.atMs = atMs;
    this.head = 0;
    this.used = n;
  }
}
