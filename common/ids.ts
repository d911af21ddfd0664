/** Branded identifiers: a TabletId can never be passed where a TableId is expected. */
declare const brand: unique symbol;
export type Brand<T, B extends string> = T & { readonly [brand]: B };

export type TableId = Brand<string, 'TableId'>;
export type TabletId = Brand<string, 'TabletId'>;
export type NodeId = Brand<string, 'NodeId'>;
export type TxnId = Brand<string, 'TxnId'>;
export type Term = Brand<number, 'Term'>;
export type LogIndex = Brand<number, 'LogIndex'>;

export const TableId = (s: string): TableId => s as TableId;
export const TabletId = (s: string): TabletId => s as TabletId;
export const NodeId = (s: string): NodeId => s as NodeId;
export const TxnId = (s: string): TxnId => s as TxnId;
export const Term = (n: number): Term => n as Term;
export const LogIndex = (n: number): LogIndex => n as LogIndex;

/** A random 128-bit id as 32 hex characters (uuid without dashes, as YugabyteDB prints them). */
export function newId(rand: () => number = Math.random): string {
  let s = '';
  for (let i = 0; i < 32; i++) s += Math.floor(rand() * 16).toString(16);
  return s;
}
