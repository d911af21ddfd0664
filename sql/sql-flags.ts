/**
 * Flags of the SQL layer (YugabyteDB's YSQL spellings). They are defined here, beside the code they
 * govern; `tessera tserver` imports this file before it parses its flags, so a tserver accepts them.
 */
import { defineFlag, FlagTag } from '../common/flags';

/** YugabyteDB's YSQL port. */
export const PGSQL_PORT_DEFAULT = 5433;

export const ENABLE_YSQL = defineFlag({
  name: 'enable_ysql',
  type: 'bool',
  default: true,
  help: 'Serve SQL over the PostgreSQL wire protocol in the tserver process (on --pgsql_proxy_bind_address).',
});

export const PGSQL_PROXY_BIND_ADDRESS = defineFlag({
  name: 'pgsql_proxy_bind_address',
  type: 'string',
  default: '',
  help: 'host:port the PostgreSQL wire protocol listens on (default: the host of --rpc_bind_addresses, port 5433).',
});

export const YSQL_PASSWORD = defineFlag({
  name: 'ysql_password',
  type: 'string',
  default: '',
  help: 'Empty: trust authentication. Set: every user must give this password (MD5 or SCRAM-SHA-256, as the client picks from the server\'s request: SCRAM).',
  tags: [FlagTag.sensitive],
});

export const YSQL_AUTH_METHOD = defineFlag({
  name: 'ysql_auth_method',
  type: 'string',
  default: 'scram-sha-256',
  help: 'With --ysql_password: scram-sha-256 or md5.',
  validate: (v) => (v === 'scram-sha-256' || v === 'md5' ? undefined : 'scram-sha-256 or md5'),
});

export const YSQL_SEQUENCE_CACHE_MINVAL = defineFlag({
  name: 'ysql_sequence_cache_minval',
  type: 'int',
  default: 100,
  help: 'Values a server takes from a sequence at once (one distributed transaction per range), as YugabyteDB caches sequence ranges.',
  validate: (v) => (v >= 1 && v <= 1_000_000 ? undefined : 'between 1 and 1000000'),
});

export const YSQL_MAX_CONNECTIONS = defineFlag({
  name: 'ysql_max_connections',
  type: 'int',
  default: 300,
  help: 'SQL connections a server accepts at once; past it a new one is refused with 53300.',
  validate: (v) => (v >= 1 ? undefined : 'at least 1'),
});

export const YSQL_CONNECTIONS_PER_IP_MAX = defineFlag({
  name: 'ysql_connections_per_ip_max',
  type: 'int',
  default: 256,
  help: 'SQL connections one remote IP address may hold open on a server, authenticated or not; past it a new one is refused with 53300.',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 1 ? undefined : 'at least 1'),
});

export const YSQL_AUTHENTICATION_TIMEOUT_MS = defineFlag({
  name: 'ysql_authentication_timeout_ms',
  type: 'int',
  default: 60_000,
  help: "A SQL connection must finish its startup and authentication within this long (PostgreSQL's authentication_timeout); else it is closed with 57014.",
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 100 && v <= 600_000 ? undefined : 'between 100 and 600000'),
});

export const YSQL_ENABLE_AGGREGATE_PUSHDOWN = defineFlag({
  name: 'ysql_enable_aggregate_pushdown',
  type: 'bool',
  default: true,
  help: 'Compute count / sum / min / max of a whole table on its tablets (only partial results cross the network) instead of reading every row into the SQL layer.',
  tags: [FlagTag.runtime],
});

export const YSQL_PARSE_CACHE = defineFlag({
  name: 'ysql_parse_cache',
  type: 'bool',
  default: true,
  help: 'Statements that differ only in integer literals share one parse (sql/parse-cache.ts, docs/sql.md "Parse cache"). false: every text is parsed (A/B).',
  tags: [FlagTag.runtime],
});

export const YSQL_PLAN_CACHE = defineFlag({
  name: 'ysql_plan_cache',
  type: 'bool',
  default: true,
  help: 'A point SELECT by primary key is planned once per parse-cache template and run again with the new constants (sql/exec/plan-cache.ts, docs/sql.md "Plan cache"). false: every statement is planned (A/B).',
  tags: [FlagTag.runtime],
});

export const YSQL_LOCAL_CALLS = defineFlag({
  name: 'ysql_local_calls',
  type: 'bool',
  default: true,
  help: 'The SQL layer calls the tablets its own tserver leads inside the process, without frames or a socket (rpc/local-calls.ts, docs/sql.md). false: every call goes over the network (runtime; A/B).',
  tags: [FlagTag.runtime],
});

export const YSQL_ENABLE_EXPRESSION_PUSHDOWN = defineFlag({
  name: 'ysql_enable_expression_pushdown',
  type: 'bool',
  default: true,
  help: 'Evaluate the comparisons of a WHERE that a scan filter can express on the tablets (rows they reject are not sent), and compute aggregates with such a WHERE there; the session setting yb_enable_expression_pushdown = off turns it off for one session.',
  tags: [FlagTag.runtime],
});

export const YSQL_ROWS_MAX = defineFlag({
  name: 'ysql_rows_in_memory_max',
  type: 'int',
  default: 2_000_000,
  help: 'Rows one statement may hold in memory (a sort, a join, a result); past it the statement fails with 54000.',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 1 ? undefined : 'at least 1'),
});

export const YSQL_BLOCK_KEEPS_WRITES = defineFlag({
  name: 'ysql_block_keeps_writes',
  type: 'bool',
  default: true,
  help: 'A BEGIN … COMMIT block keeps its upserts and deletes back to the COMMIT and answers point reads of rows it already read whole from what it knows (sql/exec/own-rows.ts, docs/sql.md "Transactions"). false: every write is sent as intents at its statement and every read goes to the tablet (runtime; A/B).',
  tags: [FlagTag.runtime],
});
