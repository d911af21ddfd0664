/**
 * Calls to the leader master: remembers the leader, follows NOT_THE_LEADER hints, tries every master
 * in turn when the leader is unknown or unreachable, and waits out elections (LEADER_NOT_READY), all
 * within the caller's deadline. One attempt of a read (locations, tables, servers; `capAttempts`)
 * waits at most `singleCallTimeoutMs`, so a leader master that hangs without closing its connections
 * costs one such wait, not the whole deadline. DDL keeps the whole deadline per attempt: a CREATE
 * that takes long on a live master must not be resent (it would answer ALREADY_EXISTS to its own
 * creator).
 */
import { DbError, ErrorCode } from '../common/errors';
import type { MethodDef, RpcClient } from '../rpc';
import { ATTEMPTS_MAX, backoffMs, Deadline, sleep } from './retry-policy';

export class MasterProxy {
  private leader: string | undefined;
  private next = 0;

  constructor(
    private readonly rpc: RpcClient,
    readonly addresses: readonly string[],
    /** Cap on one attempt of an idempotent call (0: the whole remaining deadline). */
    private readonly singleCallTimeoutMs = 0,
  ) {
    if (addresses.length === 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'masterAddresses is empty');
  }

  /**
   * `idempotent`: safe to resend after an unknown outcome (reads; DDL is guarded by names).
   * `capAttempts`: a read — one attempt waits at most singleCallTimeoutMs.
   */
  async call<Req, Resp>(m: MethodDef<Req, Resp>, req: Req, deadline: Deadline, idempotent = true, capAttempts = false): Promise<Resp> {
    let last: DbError | undefined;
    for (let attempt = 0; attempt < ATTEMPTS_MAX; attempt++) {
      if (deadline.expired()) throw deadline.timedOut(`${m.service}.${m.method}`, last);
      const addr = this.leader ?? this.addresses[this.next++ % this.addresses.length]!;
      try {
        const left = deadline.remainingMs();
        const r = await this.rpc.call(addr, m, req, { timeoutMs: Math.max(1, capAttempts && this.singleCallTimeoutMs > 0 ? Math.min(left, this.singleCallTimeoutMs) : left) });
        this.leader = addr;
        return r;
      } catch (e) {
        const err = DbError.from(e);
        last = err;
        if (err.code === ErrorCode.NOT_THE_LEADER) {
          const hint = err.details['leaderHint'];
          if (typeof hint === 'string' && hint && hint !== addr) {
            this.leader = hint;
            continue;
          }
          this.dropLeader(addr);
          await sleep(backoffMs(attempt));
          continue;
        }
        if (err.code === ErrorCode.LEADER_NOT_READY || err.code === ErrorCode.SERVICE_UNAVAILABLE) {
          await sleep(backoffMs(attempt));
          continue;
        }
        if (err.code === ErrorCode.NETWORK_ERROR || err.code === ErrorCode.TIMED_OUT || err.code === ErrorCode.SHUTTING_DOWN) {
          if (!err.retryable && !idempotent) throw err;
          this.dropLeader(addr);
          await sleep(backoffMs(Math.min(attempt, 3)));
          continue;
        }
        throw err;
      }
    }
    throw deadline.timedOut(`${m.service}.${m.method}`, last);
  }

  /** Forget the leader if it is still `addr` (a concurrent call may have found a newer one). */
  private dropLeader(addr: string): void {
    if (this.leader === addr) this.leader = undefined;
  }
}
