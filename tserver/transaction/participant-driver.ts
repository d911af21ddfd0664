/**
 * The coordinator's APPLY/REMOVE drive (coordinator.ts): a finished transaction's outcome is sent to
 * every participant tablet's leader, again every transaction_resend_applying_interval_ms, until each
 * acknowledged; the caller then forgets the transaction.
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { Flags } from '../../common/flags';
import type { HybridTime } from '../../common/hybrid-time';
import type { TxnId } from '../../common/ids';
import type { Logger } from '../../common/log';
import { TRANSACTION_RESEND_APPLYING_INTERVAL_MS } from './txn-flags';

/** Resend rounds of one APPLY/REMOVE drive before it gives up until the next leader term. */
export const DRIVE_ROUNDS_MAX = 1_000_000;
export const UPDATE_RPC_TIMEOUT_MS = 10_000;

export interface ParticipantDriveDeps {
  flags: Flags;
  log: Logger;
  /** False once the drive must end: the coordinator stopped, lost its leadership, or started another drive. */
  stillDriving(): boolean;
  updateParticipant(tabletId: string, txnId: TxnId, type: 'APPLY' | 'REMOVE', commitHt: HybridTime, timeoutMs: number): Promise<void>;
  /** Counts each UpdateTransaction sent (the coordinator's metrics). */
  onSend(): void;
}

/**
 * Drive `type` to the tablets in `pending` (acknowledged ones are removed from it); resolves when it
 * is empty or the drive ended (`stillDriving`).
 */
export async function driveParticipants(d: ParticipantDriveDeps, txnId: TxnId, type: 'APPLY' | 'REMOVE', commitHt: HybridTime, pending: Set<string>): Promise<void> {
  for (let round = 0; round < DRIVE_ROUNDS_MAX && pending.size > 0; round++) {
    if (!d.stillDriving()) return;
    await Promise.all(
      [...pending].map(async (tablet) => {
        d.onSend();
        try {
          await d.updateParticipant(tablet, txnId, type, commitHt, UPDATE_RPC_TIMEOUT_MS);
          pending.delete(tablet);
        } catch (err) {
          // A deleted participant tablet has nothing left to apply; nor has a split one: a tablet
          // splits only when no transaction has intents on it, and applies nothing after SPLIT
          // (docs/splitting.md), so this transaction's writes there were applied or never made —
          // a write that met the split went to a child, itself a participant.
          if (err instanceof DbError && (err.code === ErrorCode.TABLET_NOT_FOUND || err.code === ErrorCode.TABLE_NOT_FOUND || err.code === ErrorCode.TABLET_SPLIT)) pending.delete(tablet);
          else d.log.debug({ err, txnId, tablet, type }, 'UpdateTransaction not acknowledged; resending');
        }
      }),
    );
    if (pending.size > 0) await new Promise((res) => setTimeout(res, d.flags.get(TRANSACTION_RESEND_APPLYING_INTERVAL_MS)));
  }
}
