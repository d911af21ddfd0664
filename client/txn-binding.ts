/**
 * What a Table needs from the transaction it runs in: the TxnContextPB to send, the transaction's
 * read time, where to record participant tablets, and what to do when an operation fails. Kept as
 * an interface so table.ts stays ignorant of coordinators and heartbeats.
 */
import type { TxnContextPB } from '../rpc';
import type { RowOpPB } from '../rpc';

export interface TxnBinding {
  /** The context for the next operation; throws the transaction's error when it can no longer run one. */
  context(): TxnContextPB;
  /** Snapshot read time of every read in the transaction (may move forward once, see restartRead). */
  readonly readHt: bigint;
  /** Serializable transactions also register the tablets they read (their read intents live there). */
  readonly registersReads: boolean;
  /** A tablet the transaction wrote (or, serializable, read): the commit must reach it. */
  addParticipant(tabletId: string): void;
  /**
   * A write is about to be sent: its conflict and existence checks use the read time, so from now
   * on the read time is fixed.
   */
  fixReadTime(): void;
  /**
   * A read at `usedReadHt` met a version at `restartHt` inside the uncertainty window. True: read
   * again at the transaction's (possibly moved) read time. False: the read time was already used
   * by an earlier operation; the read must fail (the caller passes the error to failed()).
   */
  restartRead(usedReadHt: bigint, restartHt: bigint): boolean;
  /**
   * A read result at `usedReadHt` is about to reach the caller. True: it is consistent with the
   * transaction's snapshot (the read time is now fixed). False: the read time moved while the read
   * was in flight; read again.
   */
  acceptRead(usedReadHt: bigint): boolean;
  /**
   * An operation failed: the transaction decides whether it is still usable (a TXN_* code, a
   * READ_RESTART or a write with an unknown outcome ends it). Returns the error to throw.
   */
  failed(e: unknown, wasWrite: boolean): Error;
  /**
   * A blind write (upsert, delete) the transaction may keep back until its commit (client/fast-path.ts):
   * true when it took it. Absent or false: the Table sends it now.
   */
  deferWrite?(w: DeferredWrite): boolean;
  /** Send the writes kept back so far (before any other operation of the transaction). */
  flushDeferred?(): Promise<void>;
}

/** Codes the tablet invoker must not retry inside a transaction. */
export const TXN_FATAL_CODES: ReadonlySet<string> = new Set(['READ_RESTART', 'TXN_CONFLICT', 'TXN_ABORTED', 'TXN_EXPIRED', 'TXN_NOT_FOUND']);
/** Codes the tablet invoker must not retry for a read outside a transaction (Table restarts it itself). */
export const READ_FATAL_CODES: ReadonlySet<string> = new Set(['READ_RESTART']);

/** One blind write kept back until the commit (client/fast-path.ts) (or until another operation needs it sent). */
export interface DeferredWrite {
  table: string;
  tabletId: string;
  hash: number;
  schemaVersion: number;
  op: RowOpPB;
  /** Send it as an intent write (the Table's ordinary transactional write, no further deferral). */
  send(): Promise<void>;
}

