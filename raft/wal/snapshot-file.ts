/** The latest snapshot the host handed to the log (metadata + opaque data), one atomic file. */
import { DbError, ErrorCode } from '../../common/errors';
import type { NodeId } from '../../common/ids';
import type { Snapshot } from '../types';
import { readChecksummedFile, writeChecksummedFile } from './checksummed-file';
import type { WalFs } from './wal-fs';

export const SNAPSHOT_FILE = 'snapshot';
const MAGIC = 0x504e5354; // "TSNP"

export function writeSnapshotFile(fs: WalFs, dir: string, snap: Snapshot): void {
  const meta = Buffer.from(JSON.stringify(snap.meta), 'utf8');
  const body = Buffer.allocUnsafe(4 + meta.length + snap.data.length);
  body.writeUInt32LE(meta.length, 0);
  body.set(meta, 4);
  body.set(snap.data, 4 + meta.length);
  writeChecksummedFile(fs, dir, SNAPSHOT_FILE, MAGIC, body);
}

export function readSnapshotFile(fs: WalFs, dir: string): Snapshot | undefined {
  const body = readChecksummedFile(fs, dir, SNAPSHOT_FILE, MAGIC);
  if (!body) return undefined;
  const where = `${dir}/${SNAPSHOT_FILE}`;
  const bad = (what: string): DbError => new DbError(ErrorCode.CORRUPTION, `${where}: invalid snapshot (${what})`, { file: where });
  if (body.length < 4) throw bad('too short');
  const metaLen = body.readUInt32LE(0);
  if (4 + metaLen > body.length) throw bad('metadata length');
  const raw: unknown = JSON.parse(body.subarray(4, 4 + metaLen).toString('utf8'));
  if (typeof raw !== 'object' || raw === null) throw bad('metadata');
  const m = raw as Record<string, unknown>;
  const conf = m['conf'] as Record<string, unknown> | undefined;
  const index = m['index'];
  const term = m['term'];
  if (typeof index !== 'number' || typeof term !== 'number' || !conf || !Array.isArray(conf['voters']) || !Array.isArray(conf['learners'])) throw bad('metadata fields');
  const strs = (a: unknown[]): NodeId[] => a.map((x) => String(x) as NodeId);
  return {
    meta: { index, term, conf: { voters: strs(conf['voters']), learners: strs(conf['learners']) } },
    data: new Uint8Array(body.subarray(4 + metaLen)),
  };
}
