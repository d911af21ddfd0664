/**
 * Small metadata files replaced atomically: write `NAME.tmp`, fsync it, rename over `NAME`, fsync the
 * directory. The content is framed `[magic u32][version u32][crc32c u32][length u32][body]` so a bad
 * file is detected, never half-trusted. Rename makes a torn metadata file impossible; a bad checksum
 * therefore means corruption.
 */
import { DbError, ErrorCode } from '../../common/errors';
import { crc32c } from './crc32c';
import type { WalFs } from './wal-fs';
import { joinPath } from './wal-fs';

const FRAME_BYTES = 16;
const VERSION = 1;
export const TMP_SUFFIX = '.tmp';

export function writeChecksummedFile(fs: WalFs, dir: string, name: string, magic: number, body: Uint8Array): void {
  const buf = Buffer.allocUnsafe(FRAME_BYTES + body.length);
  buf.writeUInt32LE(magic, 0);
  buf.writeUInt32LE(VERSION, 4);
  buf.writeUInt32LE(crc32c(body), 8);
  buf.writeUInt32LE(body.length, 12);
  buf.set(body, FRAME_BYTES);
  const tmp = joinPath(dir, name + TMP_SUFFIX);
  fs.writeFileSynced(tmp, buf);
  fs.rename(tmp, joinPath(dir, name));
  fs.fsyncDir(dir);
}

/** The body of `dir/name`, undefined when the file does not exist; CORRUPTION when it is damaged. */
export function readChecksummedFile(fs: WalFs, dir: string, name: string, magic: number): Buffer | undefined {
  const p = joinPath(dir, name);
  if (!fs.exists(p)) return undefined;
  const buf = fs.readFile(p);
  const bad = (why: string): DbError => new DbError(ErrorCode.CORRUPTION, `${p}: ${why}`, { file: p });
  if (buf.length < FRAME_BYTES) throw bad(`file too short (${buf.length} bytes)`);
  if (buf.readUInt32LE(0) !== magic) throw bad('bad magic');
  if (buf.readUInt32LE(4) !== VERSION) throw bad(`unknown version ${buf.readUInt32LE(4)}`);
  const len = buf.readUInt32LE(12);
  if (buf.length !== FRAME_BYTES + len) throw bad(`length ${len} does not match file size ${buf.length}`);
  const body = buf.subarray(FRAME_BYTES);
  if (crc32c(body) !== buf.readUInt32LE(8)) throw bad('checksum mismatch');
  return body;
}
