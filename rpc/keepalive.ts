/**
 * The RPC keepalive rule, shared by both ends of a connection (ws-client.ts, ws-server.ts): at each
 * tick, a connection from which nothing came for `everyMs` gets a ping, and one whose ping stayed
 * unanswered (no pong, no frame) for `timeoutMs` is closed. The clock starts at the unanswered ping,
 * not at the last frame heard, so an end held up for less than `timeoutMs` (a SIGSTOP of a few
 * seconds, a long GC) keeps its connections whatever the quiet before it. A tick that finds this
 * process's own event loop held up for more than two intervals judges nothing: what came meanwhile
 * is not read yet.
 */

/** One end's view of one connection. */
export interface KeepaliveState {
  /** When anything (a frame, a ping, a pong) last came from the other end. */
  lastHeardMs: number;
  /** When the oldest ping not answered since was sent (0: none outstanding). */
  pingSentMs: number;
}

export interface KeepaliveTiming {
  everyMs: number;
  timeoutMs: number;
}

/** The timing from the flags' values; undefined when keepalive is off (interval 0 or absent). */
export function keepaliveTiming(intervalMs: number | undefined, timeoutMs: number | undefined): KeepaliveTiming | undefined {
  const every = intervalMs ?? 0;
  if (every <= 0) return undefined;
  return { everyMs: every, timeoutMs: Math.max(timeoutMs ?? 10 * every, every) };
}

/** Tells whether this process's event loop was held up since the previous tick. */
export class KeepaliveTicker {
  private lastTickMs: number;

  constructor(
    nowMs: number,
    private readonly everyMs: number,
  ) {
    this.lastTickMs = nowMs;
  }

  stalled(nowMs: number): boolean {
    const stalled = nowMs - this.lastTickMs > 2 * this.everyMs;
    this.lastTickMs = nowMs;
    return stalled;
  }
}

/** One tick of the rule for one connection: what to do now (`s.pingSentMs` is updated). */
export function keepaliveStep(s: KeepaliveState, nowMs: number, stalled: boolean, t: KeepaliveTiming): 'ping' | 'close' | 'none' {
  if (s.pingSentMs > 0 && (stalled || s.lastHeardMs >= s.pingSentMs)) s.pingSentMs = 0;
  if (stalled) return 'none';
  if (s.pingSentMs > 0 && nowMs - s.pingSentMs >= t.timeoutMs) return 'close';
  if (nowMs - s.lastHeardMs >= t.everyMs) {
    if (s.pingSentMs === 0) s.pingSentMs = nowMs;
    return 'ping';
  }
  return 'none';
}
