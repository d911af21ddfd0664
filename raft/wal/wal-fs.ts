/**
 * The file operations the WAL uses, behind an interface so a fault layer (LazyWalFs) can sit between
 * the WAL and the disk. Every method is synchronous except fdatasync, which runs on libuv's thread
 * pool so the event loop keeps serving while the disk flushes (that window is what group commit
 * fills). Errors are thrown as the Node errors they are; the WAL turns them into fail-stop.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeDirs } from '../../common/fs-dirs';

export interface WalFs {
  mkdirp(dir: string): void;
  readdir(dir: string): string[];
  exists(p: string): boolean;
  readFile(p: string): Buffer;
  /** Create a new file for reading and writing; fails if it exists. */
  createNew(p: string): number;
  /** Open an existing file, read-write or read-only. */
  openExisting(p: string, writable: boolean): number;
  /** Write all of `buf[off, off+len)` at file position `pos`. */
  write(fd: number, buf: Uint8Array, off: number, len: number, pos: number): void;
  read(fd: number, buf: Uint8Array, off: number, len: number, pos: number): number;
  fdatasync(fd: number): Promise<void>;
  fdatasyncSync(fd: number): void;
  ftruncate(fd: number, len: number): void;
  fileSize(fd: number): number;
  close(fd: number): void;
  /** Write a whole file and fsync it (not its directory). */
  writeFileSynced(p: string, data: Uint8Array): void;
  rename(from: string, to: string): void;
  unlink(p: string): void;
  /** fsync a directory, making creations, renames and deletions in it durable. */
  fsyncDir(dir: string): void;
}

export class NodeWalFs implements WalFs {
  mkdirp(dir: string): void {
    makeDirs(dir);
  }
  readdir(dir: string): string[] {
    return fs.readdirSync(dir);
  }
  exists(p: string): boolean {
    return fs.existsSync(p);
  }
  readFile(p: string): Buffer {
    return fs.readFileSync(p);
  }
  createNew(p: string): number {
    return fs.openSync(p, 'wx+');
  }
  openExisting(p: string, writable: boolean): number {
    return fs.openSync(p, writable ? 'r+' : 'r');
  }
  write(fd: number, buf: Uint8Array, off: number, len: number, pos: number): void {
    // writeSync may write less than asked (signals, large buffers); loop until all is written.
    let done = 0;
    for (let attempts = 0; done < len; attempts++) {
      if (attempts > 1_000_000) throw new Error('write made no progress');
      done += fs.writeSync(fd, buf, off + done, len - done, pos + done);
    }
  }
  read(fd: number, buf: Uint8Array, off: number, len: number, pos: number): number {
    return fs.readSync(fd, buf, off, len, pos);
  }
  fdatasync(fd: number): Promise<void> {
    return new Promise((resolve, reject) => fs.fdatasync(fd, (err) => (err ? reject(err) : resolve())));
  }
  fdatasyncSync(fd: number): void {
    fs.fdatasyncSync(fd);
  }
  ftruncate(fd: number, len: number): void {
    fs.ftruncateSync(fd, len);
  }
  fileSize(fd: number): number {
    return fs.fstatSync(fd).size;
  }
  close(fd: number): void {
    fs.closeSync(fd);
  }
  writeFileSynced(p: string, data: Uint8Array): void {
    const fd = fs.openSync(p, 'w');
    try {
      this.write(fd, data, 0, data.length, 0);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  }
  rename(from: string, to: string): void {
    fs.renameSync(from, to);
  }
  unlink(p: string): void {
    fs.unlinkSync(p);
  }
  fsyncDir(dir: string): void {
    const fd = fs.openSync(dir, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  }
}

export function joinPath(dir: string, name: string): string {
  return path.join(dir, name);
}
