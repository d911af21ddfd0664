/**
 * The processing passes of every RaftGroup of this process that are scheduled in one event-loop turn
 * run in ONE setImmediate callback (FIFO, like setImmediate). A pass that has sent what a peer waits
 * for — a leader's AppendEntries before its own fdatasync, a follower's ack after one — calls
 * flushTurnNow, and the hooks registered with onRaftSendNow (the tserver's consensus transport) write
 * out what is queued at once. Otherwise those messages waited for the transport's own setImmediate,
 * queued while the check phase ran and so run only in the next loop iteration, after a poll phase:
 * a c1 put paid that on its critical path (0.2 ms p50 on a loaded 2-core machine,
 * bench/results/2026-12-07-put-latency.md).
 */

const queued: Array<() => void> = [];
const sendNowHooks = new Set<() => void>();
let armed = false;

/** Run `fn` in this turn's Raft callback (RaftGroup's default `schedule`). */
export function scheduleRaftPass(fn: () => void): void {
  queued.push(fn);
  if (armed) return;
  armed = true;
  setImmediate(runTurn);
}

/** Call `hook` whenever a pass has sent something a peer waits for (flushTurnNow); returns its removal. */
export function onRaftSendNow(hook: () => void): () => void {
  sendNowHooks.add(hook);
  return () => void sendNowHooks.delete(hook);
}

/**
 * Run the send-now hooks, from inside a pass: a leader about to write and fdatasync its own copy of
 * new entries sends the AppendEntries first (the frames then leave before the log's positioned write
 * and the fdatasync's hand-off to the thread pool, which on a busy machine can each cost a context
 * switch), and a follower's ack goes right after its fdatasync (with what else is queued then;
 * tserver/consensus-transport.ts raft_send_at_once).
 */
export function flushTurnNow(): void {
  for (const hook of sendNowHooks) hook();
}

function runTurn(): void {
  armed = false;
  // What a pass schedules now runs in the next turn, as a setImmediate queued now would.
  const fns = queued.splice(0, queued.length);
  let failure: { e: unknown } | undefined;
  for (const fn of fns) {
    try {
      fn();
    } catch (e) {
      failure ??= { e };
    }
  }
  // One callback's failure must not starve the others; it still surfaces as it would have alone.
  if (failure) throw failure.e;
}
