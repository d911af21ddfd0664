/**
 * A RocksDB checkpoint made from outside the database: the `rocksdb` binding exposes no
 * Checkpoint::CreateCheckpoint (nor GetLiveFiles, DisableFileDeletions or DeleteRange), so tessera
 * builds one the way RocksDB's own does — table files (immutable once written) hard-linked, the
 * small mutable files (MANIFEST, CURRENT, OPTIONS, the WAL) copied — while the caller keeps every
 * write out (the engine's write lock). What it cannot keep out is RocksDB's background work: a flush
 * or a compaction may add or delete files or append to the MANIFEST mid-copy. So the directory is
 * listed (names and sizes) before and after; unequal listings mean the copy may be torn, and it is
 * thrown away and tried again (bounded). Equal listings mean nothing changed in between: every
 * file is append-only or immutable, so same names and sizes are the same contents.
 *
 * Hard links need the same file system; a link that fails (EXDEV, EPERM) falls back to a copy of
 * that file. Both children of a split share the parent's table files this way; a child's later
 * compaction writes new files and only drops its own link.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeDirs } from '../common/fs-dirs';

/** Attempts before giving up (the caller then copies rows instead). */
export const CHECKPOINT_ATTEMPTS_MAX = 10;

export interface CheckpointResult {
  /** Table files hard-linked, and files copied (the MANIFEST, CURRENT, OPTIONS, WAL, or an SST that could not be linked). */
  linkedFiles: number;
  copiedFiles: number;
  copiedBytes: number;
  attempts: number;
  /** With `walAside`: the WAL files linked there instead, by number, with their sizes at the checkpoint. */
  walFiles?: Array<{ path: string; number: number; size: number }>;
}

export interface CheckpointOptions {
  /** The WAL files hard-linked into this directory instead of the checkpoint (the caller reads them: rocksdb-wal.ts). */
  walAside?: string;
}

/** Files of a RocksDB directory a checkpoint leaves out: the lock, the info logs. */
function skipped(name: string): boolean {
  return name === 'LOCK' || name === 'LOG' || name.startsWith('LOG.old') || name.endsWith('.dbtmp');
}

function listing(dir: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const name of fs.readdirSync(dir)) {
    if (skipped(name)) continue;
    try {
      out.set(name, fs.statSync(path.join(dir, name)).size);
    } catch {
      out.set(name, -1); // deleted between readdir and stat: a change, the listings will differ
    }
  }
  return out;
}

function sameListing(a: Map<string, number>, b: Map<string, number>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}

/** One attempt; undefined when a file vanished mid-way (a compaction deleted it). */
function copyOnce(src: string, dst: string, files: Map<string, number>, o: CheckpointOptions): Omit<CheckpointResult, 'attempts'> | undefined {
  const r: Omit<CheckpointResult, 'attempts'> = { linkedFiles: 0, copiedFiles: 0, copiedBytes: 0 };
  if (o.walAside) r.walFiles = [];
  for (const [name, size] of files) {
    const from = path.join(src, name);
    const wal = name.endsWith('.log');
    const to = wal && o.walAside ? path.join(o.walAside, name) : path.join(dst, name);
    try {
      if (wal && o.walAside) {
        fs.linkSync(from, to); // no fallback to a copy: a copy is what the caller's fallback makes
        r.walFiles!.push({ path: to, number: Number(name.slice(0, -4)), size });
        continue;
      }
      if (name.endsWith('.sst')) {
        try {
          fs.linkSync(from, to);
          r.linkedFiles++;
          continue;
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        }
      }
      fs.copyFileSync(from, to);
      r.copiedFiles++;
      r.copiedBytes += size;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
  }
  return r;
}

/**
 * Make `dst` (absent or empty) a checkpoint of the open RocksDB at `src`, whose writes the caller
 * holds back. Undefined when background work kept changing the files for every attempt.
 * `walAside`: the WAL files hard-linked into that directory instead of copied into `dst`, each with
 * its size at the checkpoint. The source may append to them once its writes go on, never rewrite
 * what they held (RocksDB does not recycle WAL files unless `recycle_log_file_num` is set, and the
 * binding does not set it), so their first `size` bytes stay what the checkpoint saw.
 */
export async function checkpointRocksDir(src: string, dst: string, attemptsMax = CHECKPOINT_ATTEMPTS_MAX, o: CheckpointOptions = {}): Promise<CheckpointResult | undefined> {
  for (let attempt = 1; attempt <= attemptsMax; attempt++) {
    for (const d of o.walAside ? [dst, o.walAside] : [dst]) {
      fs.rmSync(d, { recursive: true, force: true });
      makeDirs(d);
    }
    const before = listing(src);
    const r = copyOnce(src, dst, before, o);
    if (r && sameListing(before, listing(src))) {
      r.walFiles?.sort((a, b) => a.number - b.number);
      return { ...r, attempts: attempt };
    }
    // Background work is under way: give it a moment (a flush or a compaction step is short).
    await new Promise((res) => setTimeout(res, 50 * attempt));
  }
  for (const d of o.walAside ? [dst, o.walAside] : [dst]) fs.rmSync(d, { recursive: true, force: true });
  return undefined;
}

/**
 * Another copy of a checkpoint nobody writes (a split's second child): table files hard-linked
 * again, the small mutable files copied, so each database owns its MANIFEST and WAL.
 */
export function cloneCheckpoint(src: string, dst: string): void {
  fs.rmSync(dst, { recursive: true, force: true });
  makeDirs(dst);
  for (const name of fs.readdirSync(src)) {
    if (skipped(name)) continue;
    if (name.endsWith('.sst')) {
      try {
        fs.linkSync(path.join(src, name), path.join(dst, name));
        continue;
      } catch {
        // another file system: copy it
      }
    }
    fs.copyFileSync(path.join(src, name), path.join(dst, name));
  }
}
