/**
 * Stage timestamps of the write path, for taking a low-concurrency write apart (docs/raft-write-path.md).
 * Off unless the environment variable TESSERA_STAGE_TRACE names a directory when the process starts:
 * then every process (client, tservers, master) appends `<monotonic ns> <stage> <group> <index>` lines
 * to `<dir>/<pid>.trace`. The clock is process.hrtime (CLOCK_MONOTONIC), one clock for every process
 * of the machine, so the files of a client and three tservers line up into one timeline
 * (bench/stage-breakdown.ts joins them by Raft index). Off, a call costs one branch.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

const DIR = process.env['TESSERA_STAGE_TRACE'] ?? '';
/** True when stage timestamps are being gathered (read once at start). */
export const STAGE_TRACE_ON = DIR !== '';
/** Lines held before they are written out (also every FLUSH_EVERY_MS, and at exit). */
const LINES_HELD_MAX = 8192;
const FLUSH_EVERY_MS = 500;

let lines: string[] = [];
let file = '';

function flush(): void {
  if (lines.length === 0) return;
  const text = lines.join('\n') + '\n';
  lines = [];
  try {
    fs.appendFileSync(file, text);
  } catch {
    // A diagnostic must never take a server down: the lines are lost, and the join says so (gaps).
  }
}

if (STAGE_TRACE_ON) {
  file = path.join(DIR, `${process.pid}.trace`);
  setInterval(flush, FLUSH_EVERY_MS).unref();
  process.on('exit', flush);
}

/**
 * Record that `stage` happened now for entry `index` of Raft group `group` ('-' / 0 when the stage
 * belongs to no entry: an RPC frame, a transport flush).
 */
export function traceStage(stage: string, group: string, index: number): void {
  if (!STAGE_TRACE_ON) return;
  lines.push(`${process.hrtime.bigint()} ${stage} ${group} ${index}`);
  if (lines.length >= LINES_HELD_MAX) flush();
}
