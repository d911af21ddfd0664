/** Flags owned by common/: clock and logging. */
import { defineFlag, FlagTag } from './flags';

export const MAX_CLOCK_SKEW_USEC = defineFlag({
  name: 'max_clock_skew_usec',
  type: 'int',
  default: 500_000,
  help: 'Largest clock difference between nodes that reads tolerate; a read sees a version in (read time, read time + this] as uncertain and restarts.',
  validate: (v) => (v >= 0 ? undefined : 'a non-negative number of microseconds'),
});

export const TEST_CLOCK_SKEW_MS = defineFlag({
  name: 'TEST_clock_skew_ms',
  type: 'int',
  default: 0,
  help: "Offsets this process's physical clock by N ms (clock-skew experiments). (For testing only!)",
  tags: [FlagTag.runtime],
});

export const LOG_LEVEL = defineFlag({
  name: 'log_level',
  type: 'string',
  default: 'info',
  help: 'Lowest log level written: trace, debug, info, warn, error, fatal.',
  tags: [FlagTag.runtime],
  validate: (v) => (['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'].includes(v) ? undefined : 'one of trace, debug, info, warn, error, fatal, silent'),
});
