/**
 * ReplicaHealth: the client's short memory of servers that did not answer an attempt in time (or
 * whose connection failed), shared by every tablet and status-tablet call of one client, like
 * YugabyteDB's client marking a tablet server failed. A leader that hangs without closing its
 * connections (paused, a stuck disk) costs each attempt sent to it a whole attempt timeout; while it
 * is suspect, calls go to the tablet's other replicas first, and a leader the master still reports for
 * it (the master learns of the new leader only from heartbeats) is not taken. Any answer from the
 * server — even an error — clears the suspicion; it also lapses after `suspectMs`, so a server that
 * came back is tried again.
 */
import { DbError, ErrorCode } from '../common/errors';

/** Servers remembered at most (a suspicion is a few seconds long; the map stays tiny in practice). */
const SUSPECTS_MAX = 1024;

export class ReplicaHealth {
  private readonly suspects = new Map<string, number>();

  constructor(
    private readonly suspectMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * After a failed attempt to `address`: suspect it when the server itself did not answer (the
   * connection failed, or the attempt's own timeout passed without a frame from it on the connection
   * meanwhile) — not for an error the server sent, which may be a TIMED_OUT of its own (a proposal, a
   * call it made further on), nor for a call that simply takes long on a server that answers others
   * (a write waiting on a conflict).
   */
  noteFailure(address: string, err: DbError): void {
    if (this.suspectMs <= 0) return;
    if (err.fromServer) {
      this.noteAnswer(address);
      return;
    }
    if (err.code !== ErrorCode.NETWORK_ERROR && err.code !== ErrorCode.TIMED_OUT) return;
    if (err.code === ErrorCode.TIMED_OUT && err.details['heard'] === true) return;
    if (this.suspects.size >= SUSPECTS_MAX) this.suspects.clear();
    this.suspects.set(address, this.now() + this.suspectMs);
  }

  /** The server answered (success or an error of its own): it is alive. */
  noteAnswer(address: string): void {
    if (this.suspects.size > 0) this.suspects.delete(address);
  }

  isSuspect(address: string): boolean {
    const until = this.suspects.get(address);
    if (until === undefined) return false;
    if (this.now() < until) return true;
    this.suspects.delete(address);
    return false;
  }

  /**
   * The replica to try when the leader is not known: the `rotate`-th of those not suspect (all of
   * them when every one is suspect).
   */
  pick(addresses: readonly string[], rotate: number): string | undefined {
    const healthy = addresses.filter((a) => !this.isSuspect(a));
    const from = healthy.length > 0 ? healthy : addresses;
    return from.length > 0 ? from[rotate % from.length] : undefined;
  }
}
