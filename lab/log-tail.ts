/** The last lines of a log file, reading at most a bounded chunk from its end. */
import * as fs from 'node:fs';

export const LOG_TAIL_BYTES_MAX = 1024 * 1024;

export function tailFile(file: string, lines: number): string[] {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return [];
  }
  try {
    const size = fs.fstatSync(fd).size;
    const len = Math.min(size, LOG_TAIL_BYTES_MAX);
    const buf = Buffer.alloc(len);
    fs.readSync(fd, buf, 0, len, size - len);
    return tailLines(buf.toString('utf8'), lines);
  } finally {
    fs.closeSync(fd);
  }
}

export function tailLines(text: string, lines: number): string[] {
  const all = text.split('\n');
  if (all.length && all[all.length - 1] === '') all.pop();
  return lines <= 0 ? [] : all.slice(-lines);
}
