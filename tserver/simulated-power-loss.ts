/**
 * A simulated power loss of one tserver, for the lab's durability experiment (docs/durability.md).
 * With TEST_wal_track_unsynced set at start, every tablet's Raft log goes through one LazyWalFs (the
 * lose-unsynced fault layer: it knows which bytes an fdatasync made durable). Setting
 * TEST_simulate_power_loss then drops every unsynced log byte, deletes the tablets' RocksDB WAL files
 * (tessera writes RocksDB without sync: a power loss may take all of it; what RocksDB flushed to its
 * table files stays), and SIGKILLs the process — nothing else runs in between, as with a real outage.
 * On restart each tablet replays its Raft log from what the databases kept, so only the Raft log's
 * durability decides what survives.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { defineFlag, FlagTag, type Flags } from '../common/flags';
import type { Logger } from '../common/log';
import { LazyWalFs, type WalFs } from '../raft';

export const TEST_WAL_TRACK_UNSYNCED = defineFlag({
  name: 'TEST_wal_track_unsynced',
  type: 'bool',
  default: false,
  help: 'At start: tablet Raft logs remember which bytes an fdatasync made durable (a read and a copy per overwrite), so TEST_simulate_power_loss can drop the rest. (For testing only!)',
});

export const TEST_SIMULATE_POWER_LOSS = defineFlag({
  name: 'TEST_simulate_power_loss',
  type: 'bool',
  default: false,
  help: 'Set to true: a power loss of this tserver right after the answer — unsynced Raft log bytes dropped (needs TEST_wal_track_unsynced at start), RocksDB WAL files deleted, then SIGKILL. (For testing only!)',
  tags: [FlagTag.runtime],
});

/** Delay between the flag's answer and the outage, so the setter hears that it was taken. */
const POWER_LOSS_DELAY_MS = 20;

/** The file layer for tablet logs (undefined: the plain one) and the flag armed. */
export function armSimulatedPowerLoss(d: { flags: Flags; dataDir: string; log: Logger }): WalFs | undefined {
  const lazy = d.flags.get(TEST_WAL_TRACK_UNSYNCED) ? new LazyWalFs() : undefined;
  d.flags.onChange(TEST_SIMULATE_POWER_LOSS, (on) => {
    if (!on) return;
    if (!lazy) {
      d.log.warn('TEST_simulate_power_loss ignored: this tserver was not started with TEST_wal_track_unsynced');
      return;
    }
    setTimeout(() => powerLoss(lazy, d.dataDir, d.log), POWER_LOSS_DELAY_MS);
  });
  return lazy;
}

function powerLoss(lazy: LazyWalFs, dataDir: string, log: Logger): void {
  log.warn('TEST_simulate_power_loss: dropping unsynced Raft log bytes and RocksDB WAL files, then SIGKILL');
  lazy.crash();
  const tablets = path.join(dataDir, 'tablets');
  for (const id of fs.existsSync(tablets) ? fs.readdirSync(tablets) : []) {
    for (const db of ['regular', 'intents']) {
      const dir = path.join(tablets, id, db);
      if (!fs.existsSync(dir)) continue;
      for (const f of fs.readdirSync(dir)) if (/^\d+\.log$/.test(f)) fs.rmSync(path.join(dir, f), { force: true });
    }
  }
  process.kill(process.pid, 'SIGKILL');
}
