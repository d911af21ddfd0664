/**
 * The configuration in force after each applied conf change, from the log start on: a snapshot taken
 * at a compaction index carries the configuration in force there (raft-group.ts compactLog).
 */
import type { ConfState } from './types';

/** Conf changes remembered; older ones (but the first) are dropped, compaction rarely lags that far. */
const CONF_HISTORY_MAX = 64;

export class ConfHistory {
  private list: Array<{ index: number; conf: ConfState }>;

  constructor(index: number, conf: ConfState) {
    this.list = [{ index, conf }];
  }

  /** A snapshot at `index` replaced the log. */
  reset(index: number, conf: ConfState): void {
    this.list = [{ index, conf }];
  }

  /** A conf change applied at `index` put `conf` in force. */
  push(index: number, conf: ConfState): void {
    this.list.push({ index, conf });
    if (this.list.length > CONF_HISTORY_MAX) this.list.splice(1, this.list.length - CONF_HISTORY_MAX);
  }

  at(index: number): ConfState {
    let conf = this.list[0]!.conf;
    for (const c of this.list) if (c.index <= index) conf = c.conf;
    return conf;
  }

  /** The log was compacted to `upTo`: only the newest configuration at or below it is still needed. */
  compactTo(upTo: number): void {
    let keep = 0;
    for (let i = 0; i < this.list.length; i++) if (this.list[i]!.index <= upTo) keep = i;
    this.list = this.list.slice(keep);
  }
}
