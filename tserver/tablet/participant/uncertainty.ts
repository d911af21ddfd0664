/**
 * The read uncertainty window (YugabyteDB's ReadHybridTime::global_limit, yugabyte-internals §3).
 * A server that picks a read time `readHt` from its own clock cannot tell whether a version stamped
 * a little above `readHt` by another node (whose clock may run ahead by up to max_clock_skew_usec)
 * was acknowledged before the read began. So every version in (readHt, globalLimitHt] with
 * globalLimitHt = readHt + max_clock_skew_usec is "uncertain": the read restarts at that version's
 * time (READ_RESTART), keeping the same limit, so restarts stop at the limit.
 */
import { htFrom, htLogical, htPhysicalMicros, type HybridTime } from '../../../common/hybrid-time';

/** readHt + skewUs microseconds (logical part kept); undefined when the skew bound is 0 (no window). */
export function uncertaintyLimit(readHt: HybridTime, skewUs: number): HybridTime | undefined {
  if (!(skewUs > 0)) return undefined;
  return htFrom(htPhysicalMicros(readHt) + BigInt(Math.floor(skewUs)), htLogical(readHt));
}
