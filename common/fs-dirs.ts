/**
 * Creating a directory and its parents, with a clear error when it cannot be done.
 *
 * Node 20's `fs.mkdirSync(dir, { recursive: true })` never returns when a parent exists but refuses
 * new entries with ENOENT (for example anything under /proc): it retries the parent forever, and a
 * server started with such a `--fs_data_dirs` hung at start without a word. This walks the path
 * one component at a time instead, so every failure is one `IO_ERROR` that names the directory.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DbError, ErrorCode } from './errors';

/**
 * Make `dir` and any missing parents (like `mkdir -p`). `what` names the directory in the error
 * ("data directory", "report directory"). Throws `IO_ERROR` when a component cannot be made or is
 * not a directory.
 */
export function makeDirs(dir: string, what = 'directory'): void {
  const abs = path.resolve(dir);
  const fail = (why: string): never => {
    throw new DbError(ErrorCode.IO_ERROR, `cannot create ${what} '${dir}': ${why}`);
  };
  // Fast path: already there.
  const st = statOrUndefined(abs);
  if (st) {
    if (!st.isDirectory()) fail(`'${abs}' exists and is not a directory`);
    return;
  }
  const parts: string[] = [];
  for (let p = abs; ; p = path.dirname(p)) {
    parts.push(p);
    if (path.dirname(p) === p) break;
  }
  for (const p of parts.reverse()) {
    const s = statOrUndefined(p);
    if (s) {
      if (!s.isDirectory()) fail(`'${p}' exists and is not a directory`);
      continue;
    }
    try {
      fs.mkdirSync(p);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      // Another process may have made it between our stat and mkdir.
      if (err.code === 'EEXIST' && statOrUndefined(p)?.isDirectory()) continue;
      if (err.code === 'EEXIST' && isSymlink(p)) fail(`'${p}' is a symbolic link to a missing target`);
      fail(`${err.code ?? 'error'} making '${p}'`);
    }
  }
}

function statOrUndefined(p: string): fs.Stats | undefined {
  try {
    return fs.statSync(p);
  } catch {
    return undefined;
  }
}

function isSymlink(p: string): boolean {
  try {
    return fs.lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * Replace `dir/name` with `text` so that a crash leaves the old file or the new one, never a part:
 * written to a temporary file and synced, renamed over the old one, the directory synced.
 */
export function writeFileDurably(dir: string, name: string, text: string): void {
  makeDirs(dir);
  const tmp = path.join(dir, name + '.tmp');
  const fd = fs.openSync(tmp, 'w');
  try {
    fs.writeSync(fd, text);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, path.join(dir, name));
  const dfd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(dfd);
  } finally {
    fs.closeSync(dfd);
  }
}

let asyncSaves = 0;

/** writeFileDurably off the event loop (the fsyncs run on the thread pool): for periodic saves. */
export async function writeFileDurablyAsync(dir: string, name: string, text: string): Promise<void> {
  makeDirs(dir);
  // Its own temporary file: two saves of one file that overlap never write into each other's.
  const tmp = path.join(dir, `${name}.${++asyncSaves}.tmp`);
  const f = await fs.promises.open(tmp, 'w');
  try {
    await f.writeFile(text);
    await f.sync();
  } finally {
    await f.close();
  }
  await fs.promises.rename(tmp, path.join(dir, name));
  const d = await fs.promises.open(dir, 'r');
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}
