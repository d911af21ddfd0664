/**
 * Strings of at least this many UTF-8 bytes travel as their bytes (docs/raft-write-path.md, "Large
 * values"): the client sends them so (ValuePB.utf8_value), log entries and stored values keep them
 * so and decode them only when read. One bound for all of them, so a value sent as bytes stays
 * bytes all the way.
 */
export const LARGE_STRING_BYTES_MIN = 16 << 10;
