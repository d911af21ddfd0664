/**
 * The processing passes of every RaftGroup of this process that are scheduled in one event-loop turn
 * run in ONE setImmediate callback, and hooks run right after them; a pass may also run the hooks at
 * once (flushTurnNow) when it has sent what a write waits for. The tserver's consensus transport
 * flushes there: otherwise the messages a pass hands out (a leader's AppendEntries, sent before its
 * own fdatasync) waited for a setImmediate of the transport's own, queued while the check phase ran
 * and so run only in the next loop iteration — after a poll phase (every socket and disk completion
 * ready by then): a c1 put paid that on its critical path (0.2 ms p50 on a loaded 2-core machine,
 * bench/results/2026-12-07-put-latency.md).
 */

const queued: Array<() => void> = [];
const turnEndHooks = new Set<(urgent: boolean) => void>();
let armed = false;
let running = false;

/** Run `fn` in this turn's Raft callback (RaftGroup's default `schedule`; FIFO, like setImmediate). */
export function scheduleRaftPass(fn: () => void): void {
  queued.push(fn);
  if (armed) return;
  armed = true;
  setImmediate(runTurn);
}

/** True while the passes of a turn run (what is sent now leaves at the turn's end). */
export function inRaftTurn(): boolean {
  return running;
}

/**
 * Call `hook(false)` after the passes of every turn, and `hook(true)` when a pass has sent something
 * a peer waits for (flushTurnNow); returns its removal.
 */
export function onRaftTurnEnd(hook: (urgent: boolean) => void): () => void {
  turnEndHooks.add(hook);
  return () => void turnEndHooks.delete(hook);
}

/**
 * Run the turn-end hooks now (urgent), from inside a pass: a leader about to write and fdatasync its
 * own copy of new entries sends the AppendEntries first (the frames then leave before the log's
 * positioned write and the fdatasync's hand-off to the thread pool, which on a busy machine can each
 * cost a context switch), and a follower's ack goes right after its fdatasync (with what else is
 * queued then; tserver/consensus-transport.ts raft_send_at_once).
 */
export function flushTurnNow(): void {
  for (const hook of turnEndHooks) hook(true);
}

function runTurn(): void {
  armed = false;
  // What a pass schedules now runs in the next turn, as a setImmediate queued now would.
  const fns = queued.splice(0, queued.length);
  let failure: { e: unknown } | undefined;
  running = true;
  for (const fn of fns) {
    try {
      fn();
    } catch (e) {
      failure ??= { e };
    }
  }
  running = false;
  for (const hook of turnEndHooks) {
    try {
      hook(false);
    } catch (e) {
      failure ??= { e };
    }
  }
  // One callback's failure must not starve the others; it still surfaces as it would have alone.
  if (failure) throw failure.e;
}
