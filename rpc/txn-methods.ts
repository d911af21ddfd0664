/**
 * The transaction services' method tables (rpc/protos/: TransactionCoordinatorService,
 * TransactionParticipantService) and their messages, as service-methods.ts does for the master and
 * the tablet server (re-exported from there).
 */
import { defineMethod } from './proto';
import type { MethodDef } from './types';

// ---- txn.proto (added by the client-transactions part; the server part shares these) ---------------

/** tserver.proto TxnContextPB: present when a tablet operation runs inside a distributed transaction. */
export interface TxnContextPB {
  txnId?: string;
  statusTablet?: string;
  isolation?: string;
  priority?: number;
  startHt?: bigint;
  readHt?: bigint;
  globalLimitHt?: bigint;
}
export interface CreateTransactionRequestPB {
  statusTablet?: string;
  txnId?: string;
  isolation?: string;
  priority?: number;
  propagatedHt?: bigint;
}
export interface CreateTransactionResponsePB {
  readHt?: bigint;
  propagatedHt?: bigint;
  globalLimitHt?: bigint;
  lazyRecords?: boolean;
}
export interface HeartbeatTransactionRequestPB {
  statusTablet?: string;
  txnId?: string;
  createIfMissing?: boolean;
}
export interface HeartbeatTransactionResponsePB {
  status?: string;
}
export interface CommitTransactionRequestPB {
  statusTablet?: string;
  txnId?: string;
  participantTablets?: string[];
  propagatedHt?: bigint;
  createIfMissing?: boolean;
}
export interface CommitTransactionResponsePB {
  commitHt?: bigint;
}
export interface AbortTransactionRequestPB {
  statusTablet?: string;
  txnId?: string;
  participantTablets?: string[];
}
export interface AbortTransactionResponsePB {
  status?: string;
}
export interface GetTransactionStatusRequestPB {
  statusTablet?: string;
  txnIds?: string[];
  readHt?: bigint;
  startHts?: bigint[];
}
export interface TransactionStatusPB {
  txnId?: string;
  status?: string;
  commitHt?: bigint;
  priority?: number;
  neverCommitted?: boolean;
}
export interface GetTransactionStatusResponsePB {
  statuses?: TransactionStatusPB[];
  propagatedHt?: bigint;
}
export interface UpdateTransactionItemPB {
  txnId?: string;
  type?: string;
  commitHt?: bigint;
}
export interface UpdateTransactionRequestPB extends UpdateTransactionItemPB {
  tabletId?: string;
  /** Further transactions of the same tablet in one request. */
  more?: UpdateTransactionItemPB[];
}
export interface UpdateTransactionResponsePB {
  /** One per transaction (first, then `more`); empty code = acknowledged. */
  results?: Array<{ code?: string; message?: string }>;
}

export const TXN_COORDINATOR_SERVICE = 'tessera.TransactionCoordinatorService';
export const TXN_PARTICIPANT_SERVICE = 'tessera.TransactionParticipantService';

export interface TxnCoordinatorMethods {
  createTransaction: MethodDef<CreateTransactionRequestPB, CreateTransactionResponsePB>;
  heartbeatTransaction: MethodDef<HeartbeatTransactionRequestPB, HeartbeatTransactionResponsePB>;
  commitTransaction: MethodDef<CommitTransactionRequestPB, CommitTransactionResponsePB>;
  abortTransaction: MethodDef<AbortTransactionRequestPB, AbortTransactionResponsePB>;
  getTransactionStatus: MethodDef<GetTransactionStatusRequestPB, GetTransactionStatusResponsePB>;
}
export interface TxnParticipantMethods {
  updateTransaction: MethodDef<UpdateTransactionRequestPB, UpdateTransactionResponsePB>;
}

let txnCoordinator: TxnCoordinatorMethods | undefined;
let txnParticipant: TxnParticipantMethods | undefined;

/** Served by status-tablet leaders (the transaction coordinator). */
export function txnCoordinatorMethods(): TxnCoordinatorMethods {
  txnCoordinator ??= {
    createTransaction: defineMethod(TXN_COORDINATOR_SERVICE, 'CreateTransaction', 'CreateTransactionRequestPB', 'CreateTransactionResponsePB'),
    heartbeatTransaction: defineMethod(TXN_COORDINATOR_SERVICE, 'HeartbeatTransaction', 'HeartbeatTransactionRequestPB', 'HeartbeatTransactionResponsePB'),
    commitTransaction: defineMethod(TXN_COORDINATOR_SERVICE, 'CommitTransaction', 'CommitTransactionRequestPB', 'CommitTransactionResponsePB'),
    abortTransaction: defineMethod(TXN_COORDINATOR_SERVICE, 'AbortTransaction', 'AbortTransactionRequestPB', 'AbortTransactionResponsePB'),
    getTransactionStatus: defineMethod(TXN_COORDINATOR_SERVICE, 'GetTransactionStatus', 'GetTransactionStatusRequestPB', 'GetTransactionStatusResponsePB'),
  };
  return txnCoordinator;
}

/** Served by participant tablet leaders (coordinator -> participant: apply or remove intents). */
export function txnParticipantMethods(): TxnParticipantMethods {
  txnParticipant ??= {
    updateTransaction: defineMethod(TXN_PARTICIPANT_SERVICE, 'UpdateTransaction', 'UpdateTransactionRequestPB', 'UpdateTransactionResponsePB'),
  };
  return txnParticipant;
}
