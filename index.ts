/**
 * tessera's package main export: the client library, its errors and types.
 *
 *   import { TesseraClient, DbError, ErrorCode } from 'tessera';
 */
export { TesseraClient, Table, DEFAULT_TIMEOUT_MS, Transaction, type TransactionOptions, type CommitResult, type IsolationLevel, type TransactionState } from './client';
export type * from './client/client-types';
export { DbError, ErrorCode, isDbError } from './common/errors';
