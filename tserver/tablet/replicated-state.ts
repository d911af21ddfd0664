/**
 * The replicated state a replica keeps in memory besides DocDB — retryable requests and row locks —
 * saved at each log GC (with the log after it, what a restart rebuilds them from) and rebuilt at
 * start from that image and the log's entries.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DbError, ErrorCode } from '../../common/errors';
import { writeFileDurablyAsync } from '../../common/fs-dirs';
import type { LogStorage } from '../../raft';
import { parseRetryableImage, type RetryableRequests } from './retryable-requests';
import { parseRowLockImage, type RowLockTable } from './row-locks';
import { decodeTabletOp, requestsOf, TabletOpKind } from './tablet-op';

/** The retryable requests as of the last log GC. */
const RETRYABLE_FILE = 'retryable.json';
/** The row locks as of the last log GC. */
export const ROW_LOCKS_FILE = 'row-locks.json';
/** Log entries read at a time when a restart rebuilds the retryable requests from the log. */
const RETRYABLE_SCAN_ENTRIES = 1024;

export interface ReplicatedStateDeps {
  dir: string;
  retryable: RetryableRequests;
  rowLocks: RowLockTable;
}

function readImage(file: string): unknown {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new DbError(ErrorCode.CORRUPTION, `cannot read ${file}: ${(e as Error).message}`);
  }
}

/**
 * The retryable requests and row locks at start: the images saved at the last log GC, then the
 * entries of the log up to `appliedIndex` (those after it are applied again, which records them).
 */
export function loadReplicatedState(d: ReplicatedStateDeps, storage: LogStorage, appliedIndex: number): void {
  const file = path.join(d.dir, RETRYABLE_FILE);
  if (fs.existsSync(file)) d.retryable.restore(parseRetryableImage(readImage(file)));
  const locksFile = path.join(d.dir, ROW_LOCKS_FILE);
  if (fs.existsSync(locksFile)) {
    const image = readImage(locksFile);
    try {
      d.rowLocks.restore(parseRowLockImage(image));
    } catch (e) {
      throw new DbError(ErrorCode.CORRUPTION, `cannot read ${locksFile}: ${(e as Error).message}`);
    }
  }
  for (let lo = storage.firstIndex(); lo <= appliedIndex; lo += RETRYABLE_SCAN_ENTRIES) {
    for (const e of storage.entries(lo, Math.min(appliedIndex + 1, lo + RETRYABLE_SCAN_ENTRIES))) {
      // Only entries of retryable requests begin with the request tag: the others are not decoded.
      if (e.type !== 'normal') continue;
      if (e.data[0] === TabletOpKind.ROW_LOCK) {
        // Lock entries write no database: the frontier says nothing of them, the log does.
        const lock = decodeTabletOp(e.data);
        if (lock.type === 'ROW_LOCK') d.rowLocks.apply(lock, e.index);
        continue;
      }
      if (e.data[0] !== TabletOpKind.REQUEST) continue;
      const op = decodeTabletOp(e.data);
      if (op.type === 'WRITE' || op.type === 'WRITE_INTENTS') for (const r of requestsOf(op)) d.retryable.replicated(r, op.ht);
    }
  }
}

/** Before the log is compacted: what its entries tell of retryable requests and row locks survives in the images. */
export async function saveReplicatedState(d: ReplicatedStateDeps): Promise<void> {
  await writeFileDurablyAsync(d.dir, RETRYABLE_FILE, JSON.stringify(d.retryable.image()));
  await saveRowLocks(d);
}

export async function saveRowLocks(d: ReplicatedStateDeps): Promise<void> {
  await writeFileDurablyAsync(d.dir, ROW_LOCKS_FILE, JSON.stringify(d.rowLocks.image()));
}
