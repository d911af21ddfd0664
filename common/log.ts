/**
 * Structured logging (pino). Each server keeps the last lines in a bounded ring so the /logs page can
 * show them without reading files.
 */
import pino from 'pino';
import { Writable } from 'node:stream';

export type Logger = pino.Logger;

export const LOG_RING_LINES_MAX = 2000;

export class LogRing {
  private readonly lines: string[] = [];
  push(line: string): void {
    this.lines.push(line);
    if (this.lines.length > LOG_RING_LINES_MAX) this.lines.splice(0, this.lines.length - LOG_RING_LINES_MAX);
  }
  tail(n = 200): string[] {
    return this.lines.slice(-n);
  }
}

export interface LoggerOptions {
  name: string;
  level?: string;
  /** Also write every line here (default: stderr). `null` disables the stream output. */
  stream?: NodeJS.WritableStream | null;
  ring?: LogRing;
}

export function createLogger(opts: LoggerOptions): Logger {
  const out = opts.stream === undefined ? process.stderr : opts.stream;
  const ring = opts.ring;
  const dest = new Writable({
    write(chunk: Buffer, _enc, cb) {
      const s = chunk.toString();
      ring?.push(s.trimEnd());
      if (out) out.write(s);
      cb();
    },
  });
  return pino({ name: opts.name, level: opts.level ?? 'info', base: { name: opts.name } }, dest);
}

/** A logger that drops everything (unit tests, simulation). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
