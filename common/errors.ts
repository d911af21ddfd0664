/**
 * Expected failures. Every failure a caller can expect is a DbError with a stable `code`; the code
 * is part of the wire protocol and callers branch on it, never on the message text.
 */
export const ErrorCode = {
  NOT_THE_LEADER: 'NOT_THE_LEADER',
  LEADER_NOT_READY: 'LEADER_NOT_READY',
  TABLET_NOT_FOUND: 'TABLET_NOT_FOUND',
  TABLE_NOT_FOUND: 'TABLE_NOT_FOUND',
  ALREADY_EXISTS: 'ALREADY_EXISTS',
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  NOT_SAFE: 'NOT_SAFE',
  TIMED_OUT: 'TIMED_OUT',
  NETWORK_ERROR: 'NETWORK_ERROR',
  SERVICE_UNAVAILABLE: 'SERVICE_UNAVAILABLE',
  TXN_CONFLICT: 'TXN_CONFLICT',
  TXN_ABORTED: 'TXN_ABORTED',
  TXN_EXPIRED: 'TXN_EXPIRED',
  TXN_NOT_FOUND: 'TXN_NOT_FOUND',
  READ_RESTART: 'READ_RESTART',
  MALFORMED_FRAME: 'MALFORMED_FRAME',
  MESSAGE_TOO_LARGE: 'MESSAGE_TOO_LARGE',
  UNKNOWN_METHOD: 'UNKNOWN_METHOD',
  BACKPRESSURE: 'BACKPRESSURE',
  PROPOSAL_DROPPED: 'PROPOSAL_DROPPED',
  CORRUPTION: 'CORRUPTION',
  IO_ERROR: 'IO_ERROR',
  NOT_FOUND: 'NOT_FOUND',
  SHUTTING_DOWN: 'SHUTTING_DOWN',
  INTERNAL: 'INTERNAL',
  /**
   * Nothing was done; send the request again, on its own: a transactional write coalesced with
   * others that would wait on a conflict (wait-on-conflict), which must not hold the others' answer.
   */
  TRY_AGAIN: 'TRY_AGAIN',
  /**
   * Nothing was done: the request was built with another version of the table's schema than the
   * tablet has (an ALTER TABLE ran or is running); details.tabletVersion. The client rebuilds it
   * with the table's current schema (or waits for a tablet still behind) and sends it again.
   */
  SCHEMA_VERSION_MISMATCH: 'SCHEMA_VERSION_MISMATCH',
  /** A well-formed request for something tessera does not do (e.g. writing the `transactions` system table). */
  NOT_SUPPORTED: 'NOT_SUPPORTED',
  /**
   * Nothing was done: a write's request id is below the lowest one its client still waits for (the
   * client gave up on it, so the tablet no longer remembers whether it ran): a late copy of an old
   * attempt, which must not run again.
   */
  STALE_REQUEST: 'STALE_REQUEST',
  /**
   * A read time below the tablet's history floor (the highest cutoff its history GC used): versions
   * that read would need may be gone. Not retryable as is; read at a newer time.
   */
  SNAPSHOT_TOO_OLD: 'SNAPSHOT_TOO_OLD',
  /**
   * A server a command started or waits for exited (or its container stopped) before it became
   * healthy: an unknown flag, a port in use, a data directory another server holds. The message
   * carries its exit status and its log's tail; details.node and details.role name it.
   */
  SERVER_EXITED: 'SERVER_EXITED',
  /**
   * Nothing was done: a mutateRows call names rows of more than one tablet (details.tablets); it is
   * atomic only inside one tablet, and is never split silently (docs/rows.md).
   */
  CROSS_TABLET_MUTATION: 'CROSS_TABLET_MUTATION',
  /** Nothing was done: the row is locked by another holder (lockRow; details.token, details.leaseLeftMs). */
  ROW_LOCKED: 'ROW_LOCKED',
  /**
   * Nothing was done: the write carries a row lock that is no longer the row's live lock (its lease
   * ran out, it was released, or a newer lock with a higher fencing token took the row).
   */
  FENCED: 'FENCED',
  /** Nothing was done: renew/unlock named a lock id that does not hold the row (wrong id, released, expired). */
  ROW_LOCK_NOT_HELD: 'ROW_LOCK_NOT_HELD',
  /** Nothing was done: the value a row operation would write is larger than the cell limit (row_cell_bytes_max). */
  VALUE_TOO_LARGE: 'VALUE_TOO_LARGE',
  /**
   * The peer did not prove it holds the cluster secret (RPC) or a console token (HTTP 401): no
   * credentials, wrong ones, or a handshake that never completed. See docs/security.md.
   */
  UNAUTHENTICATED: 'UNAUTHENTICATED',
  /**
   * Refused by policy whoever asks (HTTP 403): a console mutation that looks cross-site (a form
   * content type, a foreign Origin or Host), or a flag change the server was not started to allow
   * (--allow_unsafe_flag_changes, --enable_test_flags). details.reason names the check.
   */
  PERMISSION_DENIED: 'PERMISSION_DENIED',
  /**
   * Nothing was done: the tablet was split (docs/splitting.md); details.children names its two
   * children. The client reloads the table's locations and sends the request to the right child.
   */
  TABLET_SPLIT: 'TABLET_SPLIT',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Codes a client may retry without risking a double effect (the request was certainly not applied). */
const RETRYABLE: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  ErrorCode.NOT_THE_LEADER,
  ErrorCode.LEADER_NOT_READY,
  ErrorCode.TABLET_NOT_FOUND,
  ErrorCode.SERVICE_UNAVAILABLE,
  ErrorCode.BACKPRESSURE,
  ErrorCode.READ_RESTART,
  ErrorCode.PROPOSAL_DROPPED,
  ErrorCode.TRY_AGAIN,
  ErrorCode.TABLET_SPLIT,
]);

export type ErrorDetails = Record<string, unknown>;

export interface WireError {
  code: string;
  message: string;
  details?: ErrorDetails;
}

export class DbError extends Error {
  override readonly name = 'DbError';
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly details: ErrorDetails;
  /** The server answered with this error (an RPC error frame): it was alive, whatever the code says. */
  readonly fromServer: boolean;

  constructor(code: ErrorCode, message: string, details: ErrorDetails = {}, options?: { cause?: unknown; retryable?: boolean; fromServer?: boolean }) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.code = code;
    this.details = details;
    this.retryable = options?.retryable ?? RETRYABLE.has(code);
    this.fromServer = options?.fromServer ?? false;
  }

  toWire(): WireError {
    return { code: this.code, message: this.message, details: this.details };
  }

  /** The error as one entry of a batched response's per-item results (UpdateTransaction, coalesced Write). */
  toResult(): { code: string; message: string } {
    return { code: this.code, message: this.message };
  }

  /** A per-item result's error (an unknown code becomes INTERNAL). */
  static fromResult(r: { code: string; message?: string }): DbError {
    return new DbError(isErrorCode(r.code) ? r.code : ErrorCode.INTERNAL, r.message ?? r.code);
  }

  static fromWire(w: WireError): DbError {
    const code = isErrorCode(w.code) ? w.code : ErrorCode.INTERNAL;
    return new DbError(code, w.message, w.details ?? {}, { fromServer: true });
  }

  /** Any thrown value as a DbError (unknown exceptions become INTERNAL, keeping the cause). */
  static from(e: unknown): DbError {
    if (e instanceof DbError) return e;
    const msg = e instanceof Error ? e.message : String(e);
    return new DbError(ErrorCode.INTERNAL, msg, {}, { cause: e });
  }
}

export function isErrorCode(s: string): s is ErrorCode {
  return Object.prototype.hasOwnProperty.call(ErrorCode, s);
}

export function isDbError(e: unknown, code?: ErrorCode): e is DbError {
  return e instanceof DbError && (code === undefined || e.code === code);
}
