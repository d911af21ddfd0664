/**
 * Consensus metadata (YugabyteDB's `consensus_meta`): hard state, configuration, where the log starts
 * (the last compacted index and its term) and the oldest segment that belongs to the log. One small
 * file replaced atomically.
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { NodeId } from '../../common/ids';
import type { ConfState, HardState } from '../types';
import { readChecksummedFile, writeChecksummedFile } from './checksummed-file';
import type { WalFs } from './wal-fs';

export const CONSENSUS_META_FILE = 'consensus-meta';
const MAGIC = 0x544d4354; // "TCMT"

export interface ConsensusMeta {
  hardState: HardState;
  conf: ConfState;
  /** Entries at or below logStart.index are compacted; term(logStart.index) = logStart.term. */
  logStart: { index: number; term: number };
  /** Segments with a lower sequence number predate a snapshot install and are ignored (then deleted). */
  firstSegmentSeq: number;
}

export function emptyConsensusMeta(): ConsensusMeta {
  return { hardState: { term: 0, vote: '', commit: 0 }, conf: { voters: [], learners: [] }, logStart: { index: 0, term: 0 }, firstSegmentSeq: 1 };
}

export function writeConsensusMeta(fs: WalFs, dir: string, meta: ConsensusMeta): void {
  writeChecksummedFile(fs, dir, CONSENSUS_META_FILE, MAGIC, Buffer.from(JSON.stringify(meta), 'utf8'));
}

export function readConsensusMeta(fs: WalFs, dir: string): ConsensusMeta | undefined {
  const body = readChecksummedFile(fs, dir, CONSENSUS_META_FILE, MAGIC);
  if (!body) return undefined;
  return parseConsensusMeta(JSON.parse(body.toString('utf8')) as unknown, `${dir}/${CONSENSUS_META_FILE}`);
}

function bad(where: string, what: string): DbError {
  return new DbError(ErrorCode.CORRUPTION, `${where}: invalid consensus metadata (${what})`, { file: where });
}

function obj(v: unknown, where: string, what: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad(where, what);
  return v as Record<string, unknown>;
}

function nat(v: unknown, where: string, what: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw bad(where, what);
  return v;
}

function ids(v: unknown, where: string, what: string): NodeId[] {
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw bad(where, what);
  return v as NodeId[];
}

export function parseConsensusMeta(raw: unknown, where: string): ConsensusMeta {
  const m = obj(raw, where, 'not an object');
  const hs = obj(m['hardState'], where, 'hardState');
  const conf = obj(m['conf'], where, 'conf');
  const ls = obj(m['logStart'], where, 'logStart');
  const vote = hs['vote'];
  if (typeof vote !== 'string') throw bad(where, 'hardState.vote');
  return {
    hardState: { term: nat(hs['term'], where, 'hardState.term'), vote: vote as NodeId | '', commit: nat(hs['commit'], where, 'hardState.commit') },
    conf: { voters: ids(conf['voters'], where, 'conf.voters'), learners: ids(conf['learners'], where, 'conf.learners') },
    logStart: { index: nat(ls['index'], where, 'logStart.index'), term: nat(ls['term'], where, 'logStart.term') },
    firstSegmentSeq: nat(m['firstSegmentSeq'], where, 'firstSegmentSeq'),
  };
}
