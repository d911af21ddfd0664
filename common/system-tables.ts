/**
 * Names of the tables the cluster creates for itself. The master creates them; clients may read but
 * not write them; tservers recognise their tablets (status tablets) by the name.
 */

/** The transaction status table (YugabyteDB: system.transactions; docs/architecture.md §Transactions): one record per distributed transaction, on its status tablet. */
export const TRANSACTIONS_TABLE = 'transactions';
