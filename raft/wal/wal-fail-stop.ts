/**
 * The durable log's fail-stop rule (file-log-storage.ts): the first write, fsync or read-back error
 * is reported once (onFatal: default log and exit(70)) and every later call fails with it; the log
 * never retries an fsync after an error (fsyncgate: a retried fsync can "succeed" with the data gone).
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { Logger } from '../../common/log';

export class WalFailStop {
  /** The first failure, once there was one: every later call fails with it. */
  failed: DbError | undefined;

  constructor(
    private readonly dir: string,
    private readonly log: Logger,
    private readonly onFatal: (err: Error) => void,
  ) {}

  /** Record the failure `e` (the first one wins) and report it. */
  fatal(e: unknown): void {
    if (this.failed) return;
    const cause = e instanceof Error ? e : new Error(String(e));
    this.failed = e instanceof DbError ? e : new DbError(ErrorCode.IO_ERROR, `WAL ${this.dir}: ${cause.message}`, { dir: this.dir }, { cause });
    this.log.error({ err: cause, dir: this.dir }, 'WAL I/O failure (fail-stop)');
    this.onFatal(cause);
  }

  /** fatal(e), then the error every later call gets (to throw). */
  fail(e: unknown): DbError {
    this.fatal(e);
    return this.failed!;
  }

  /** Run `fn`; any error it throws stops the log. */
  guard(fn: () => void): void {
    try {
      fn();
    } catch (e) {
      if (e instanceof DbError && this.failed === e) throw e;
      throw this.fail(e);
    }
  }

  /** Throw unless the log may still be used (neither failed nor `closed`). */
  checkAlive(closed: boolean): void {
    if (this.failed) throw this.failed;
    if (closed) throw new DbError(ErrorCode.SHUTTING_DOWN, `WAL ${this.dir} is closed`);
  }
}
