/** Public API of the SQL layer: the PostgreSQL-protocol endpoint a tserver process runs. */
export { SqlServer, type SqlServerOptions } from './sql-server';
export { ENABLE_YSQL, PGSQL_PROXY_BIND_ADDRESS, PGSQL_PORT_DEFAULT, YSQL_PASSWORD } from './sql-flags';
export { parseSql } from './sql-parser';
