/**
 * RaftGroup.campaignSoon's retries (raft-group.ts): after campaigning at once, campaign again every
 * `everyTicks` ticks while no leader is known, until `forTicks` ticks have passed. The retries cover
 * peers that did not host the group yet when the first votes went out (their messages were dropped).
 */
export class FastCampaign {
  private state: { untilTick: number; everyTicks: number; lastTick: number } | undefined;

  /** Start retrying from tick `tick` (the first campaign is the caller's). */
  start(tick: number, o: { forTicks: number; everyTicks: number }): void {
    this.state = { untilTick: tick + o.forTicks, everyTicks: Math.max(1, o.everyTicks), lastTick: tick };
  }

  /** At each tick: true when it is time to campaign again. A known leader or the end of the window stops the retries. */
  due(tick: number, leaderKnown: boolean): boolean {
    const f = this.state;
    if (!f) return false;
    if (leaderKnown || tick >= f.untilTick) {
      this.state = undefined;
      return false;
    }
    if (tick - f.lastTick < f.everyTicks) return false;
    f.lastTick = tick;
    return true;
  }
}
