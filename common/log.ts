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

/**
 * Make `log` and every logger derived from it follow the `log_level` flag, at start and when it is
 * changed at run time (pino children copy their parent's level only when created, so each child made
 * from now on is tracked weakly and updated too). Returns the unsubscribe function.
 */
export function followLogLevel(log: Logger, get: () => string, onChange: (l: (v: string) => void) => () => void): () => void {
  const children = new Set<WeakRef<Logger>>();
  const track = (l: Logger): Logger => {
    if (children.size >= 1024) for (const r of children) if (!r.deref()) children.delete(r);
    children.add(new WeakRef(l));
    const child = l.child.bind(l);
    l.child = ((bindings: pino.Bindings, options?: pino.ChildLoggerOptions) => track(child(bindings, options))) as unknown as typeof l.child;
    return l;
  };
  track(log);
  const apply = (level: string): void => {
    for (const r of children) {
      const l = r.deref();
      if (l) l.level = level;
      else children.delete(r);
    }
  };
  apply(get());
  return onChange(apply);
}

/** A logger that drops everything (unit tests, simulation). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
