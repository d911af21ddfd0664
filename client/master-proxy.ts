/**
 * Calls to the leader master: remembers the leader, follows NOT_THE_LEADER hints, tries every master
 * in turn when the leader is unknown or unreachable, and waits out elections (LEADER_NOT_READY), all
 * within the caller's deadline.
 */
import { DbError, ErrorCode } from '../common/errors';
import type { MethodDef, RpcClient } from '../rpc/types';
import { ATTEMPTS_MAX, backoffMs, Deadline, sleep } from './retry-policy';

export class MasterProxy {
  private leader: string | undefined;
  private next = 0;

  constructor(
    private readonly rpc: RpcClient,
    readonly addresses: readonly string[],
  ) {
    if (addresses.length === 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'masterAddresses is empty');
  }

  /** `idempotent`: safe to resend after an unknown outcome (reads; DDL is guarded by names). */
  async call<Req, Resp>(m: MethodDef<Req, Resp>, req: Req, deadline: Deadline, idempotent = true): Promise<Resp> {
    let last: DbError | undefined;
    for (let attempt = 0; attempt < ATTEMPTS_MAX; attempt++) {
      if (deadline.expired()) throw deadline.timedOut(`${m.service}.${m.method}`, last);
      const addr = this.leader ?? this.addresses[this.next++ % this.addresses.length]!;
      try {
        const r = await this.rpc.call(addr, m, req, { timeoutMs: Math.max(1, deadline.remainingMs()) });
        this.leader = addr;
        return r;
      } catch (e) {
        const err = DbError.from(e);
        last = err;
        if (err.code === ErrorCode.NOT_THE_LEADER) {
          const hint = err.details['leaderHint'];
          this.leader = typeof hint === 'string' && hint && hint !== addr ? hint : undefined;
          if (!this.leader) await sleep(backoffMs(attempt));
          continue;
        }
        if (err.code === ErrorCode.LEADER_NOT_READY || err.code === ErrorCode.SERVICE_UNAVAILABLE) {
          await sleep(backoffMs(attempt));
          continue;
        }
        if (err.code === ErrorCode.NETWORK_ERROR || err.code === ErrorCode.TIMED_OUT || err.code === ErrorCode.SHUTTING_DOWN) {
          if (!err.retryable && !idempotent) throw err;
          this.leader = undefined;
          await sleep(backoffMs(Math.min(attempt, 3)));
          continue;
        }
        throw err;
      }
    }
    throw deadline.timedOut(`${m.service}.${m.method}`, last);
  }
}
