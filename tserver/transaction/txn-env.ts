/** Moved to the tablet's participant side (docs/architecture.md §Participant side); kept so older imports still resolve. */
export * from '../tablet/participant/txn-env';
