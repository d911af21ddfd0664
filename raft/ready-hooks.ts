/**
 * A RaftGroup's hooks that run right before its next Ready (RaftGroup.beforeNextReady /
 * beforeNextSend, raft-group.ts): a host holds proposals that arrive while a pass awaits its fsync and
 * proposes them as ONE entry (the participant's APPLY entries, tserver/transaction/apply-coalescer.ts).
 * A hook's failure is its own (it answers its callers): it never stops the group.
 */
export class ReadyHooks {
  private hooks: Array<() => void> = [];
  /** A beforeNextSend hook waits: the group's next turn during a sync runs the hooks and sends at once. */
  early = false;

  add(fn: () => void, early: boolean): void {
    this.hooks.push(fn);
    if (early) this.early = true;
  }

  run(): void {
    this.early = false;
    const fns = this.hooks;
    this.hooks = [];
    for (const fn of fns) {
      try {
        fn();
      } catch {
        // see the file comment
      }
    }
  }
}
