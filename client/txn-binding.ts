/**
 * What a Table needs from the transaction it runs in: the TxnContextPB to send, the transaction's
 * read time, where to record participant tablets, and what to do when an operation fails. Kept as
 * an interface so table.ts stays ignorant of coordinators and heartbeats.
 */
import type { TxnContextPB } from '../rpc/service-methods';

export interface TxnBinding {
  /** The context for the next operation; throws the transaction's error when it can no longer run one. */
  context(): TxnContextPB;
  /** Snapshot read time of every read in the transaction. */
  readonly readHt: bigint;
  /** Serializable transactions also register the tablets they read (their read intents live there). */
  readonly registersReads: boolean;
  /** A tablet the transaction wrote (or, serializable, read): the commit must reach it. */
  addParticipant(tabletId: string): void;
  /**
   * An operation failed: the transaction decides whether it is still usable (a TXN_* code, a
   * READ_RESTART or a write with an unknown outcome ends it). Returns the error to throw.
   */
  failed(e: unknown, wasWrite: boolean): Error;
}

/** Codes the tablet invoker must not retry inside a transaction. */
export const TXN_FATAL_CODES: ReadonlySet<string> = new Set(['READ_RESTART', 'TXN_CONFLICT', 'TXN_ABORTED', 'TXN_EXPIRED', 'TXN_NOT_FOUND']);
