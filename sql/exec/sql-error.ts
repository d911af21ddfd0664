/**
 * SQL errors: a SQLSTATE and a message, sent as an ErrorResponse; the session stays usable. Client
 * library failures (DbError) are mapped to the SQLSTATE PostgreSQL would give the same situation.
 */
import { DbError, ErrorCode } from '../../common/errors';

export const SqlState = {
  SYNTAX_ERROR: '42601',
  UNDEFINED_TABLE: '42P01',
  UNDEFINED_COLUMN: '42703',
  UNDEFINED_FUNCTION: '42883',
  UNDEFINED_OBJECT: '42704',
  INVALID_COLUMN_REFERENCE: '42P10',
  DUPLICATE_ALIAS: '42712',
  DUPLICATE_TABLE: '42P07',
  DUPLICATE_OBJECT: '42710',
  DUPLICATE_COLUMN: '42701',
  INVALID_TABLE_DEFINITION: '42P16',
  DATATYPE_MISMATCH: '42804',
  WRONG_OBJECT_TYPE: '42809',
  GROUPING_ERROR: '42803',
  WINDOWING_ERROR: '42P20',
  INVALID_RECURSION: '42P19',
  AMBIGUOUS_COLUMN: '42702',
  INVALID_PARAMETER: '22023',
  UNIQUE_VIOLATION: '23505',
  NOT_NULL_VIOLATION: '23502',
  CHECK_VIOLATION: '23514',
  INVALID_TEXT: '22P02',
  STRING_TOO_LONG: '22001',
  NUMERIC_OUT_OF_RANGE: '22003',
  DIVISION_BY_ZERO: '22012',
  INVALID_LOG_ARGUMENT: '2201E',
  INVALID_POWER_ARGUMENT: '2201F',
  INVALID_DATETIME: '22007',
  DATETIME_FIELD_OVERFLOW: '22008',
  INVALID_ESCAPE_SEQUENCE: '22025',
  INVALID_REGULAR_EXPRESSION: '2201B',
  NULL_VALUE_NOT_ALLOWED: '22004',
  INVALID_ARGUMENT_FOR_WIDTH_BUCKET: '2201G',
  SUBSTRING_ERROR: '22011',
  SERIALIZATION_FAILURE: '40001',
  IN_FAILED_TXN: '25P02',
  ACTIVE_SQL_TXN: '25001',
  NO_ACTIVE_SQL_TXN: '25P01',
  INVALID_SAVEPOINT: '3B001',
  READ_ONLY_SQL_TXN: '25006',
  SNAPSHOT_TOO_OLD: '72000',
  INVALID_PARAMETER_VALUE: '22023',
  FEATURE_NOT_SUPPORTED: '0A000',
  QUERY_CANCELED: '57014',
  PROGRAM_LIMIT: '54000',
  STATEMENT_TOO_COMPLEX: '54001',
  INVALID_PASSWORD: '28P01',
  INVALID_AUTH: '28000',
  UNDEFINED_DATABASE: '3D000',
  PROTOCOL_VIOLATION: '08P01',
  INVALID_PSTATEMENT: '26000',
  DUPLICATE_PSTATEMENT: '42P05',
  INVALID_CURSOR: '34000',
  TOO_MANY_CONNECTIONS: '53300',
  CARDINALITY: '21000',
  OBJECT_IN_USE: '55006',
  OBJECT_NOT_IN_PREREQUISITE_STATE: '55000',
  CONNECTION_FAILURE: '08006',
  INTERNAL: 'XX000',
} as const;
export type SqlState = (typeof SqlState)[keyof typeof SqlState];

export class SqlError extends Error {
  constructor(
    readonly sqlState: SqlState,
    message: string,
    readonly extra: { position?: number; detail?: string; hint?: string } = {},
  ) {
    super(message);
  }
}

export const notSupported = (what: string): SqlError => new SqlError(SqlState.FEATURE_NOT_SUPPORTED, `${what} is not supported by tessera`);

/** Any failure as a SqlError: DbError codes map to their PostgreSQL counterparts. */
export function toSqlError(e: unknown): SqlError {
  if (e instanceof SqlError) return e;
  if (e instanceof DbError) {
    switch (e.code) {
      case ErrorCode.TXN_CONFLICT:
      case ErrorCode.TXN_ABORTED:
      case ErrorCode.TXN_EXPIRED:
      case ErrorCode.READ_RESTART:
        // Retryable as a whole transaction: pgbench --max-tries and drivers retry on 40001.
        return new SqlError(SqlState.SERIALIZATION_FAILURE, `could not serialize access due to concurrent update (${e.code}: ${e.message})`);
      case ErrorCode.TABLE_NOT_FOUND:
        return new SqlError(SqlState.UNDEFINED_TABLE, e.message);
      case ErrorCode.ALREADY_EXISTS:
        return new SqlError(SqlState.UNIQUE_VIOLATION, e.message);
      case ErrorCode.MESSAGE_TOO_LARGE:
        return new SqlError(SqlState.PROGRAM_LIMIT, e.message);
      case ErrorCode.NOT_SUPPORTED:
        return new SqlError(SqlState.FEATURE_NOT_SUPPORTED, e.message);
      case ErrorCode.SNAPSHOT_TOO_OLD:
        // Oracle's and YugabyteDB's "snapshot too old": the read time is below the retained history.
        return new SqlError(SqlState.SNAPSHOT_TOO_OLD, e.message);
      default:
        return new SqlError(SqlState.INTERNAL, `${e.code}: ${e.message}`);
    }
  }
  return new SqlError(SqlState.INTERNAL, e instanceof Error ? e.message : String(e));
}
