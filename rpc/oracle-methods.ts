/**
 * TimestampOracle (rpc/protos/oracle.proto): the master leader's timestamp oracle for Percolator
 * transactions, with the TypeScript shapes of its messages as rpc/proto.ts decodes them.
 */
import { defineMethod } from './proto';
import type { MethodDef } from './types';

export const ORACLE_SERVICE = 'tessera.TimestampOracle';

export interface GetTimestampsRequestPB {
  count?: number;
}
export interface GetTimestampsResponsePB {
  first?: bigint;
  count?: number;
}

export interface OracleMethods {
  getTimestamps: MethodDef<GetTimestampsRequestPB, GetTimestampsResponsePB>;
}

let oracle: OracleMethods | undefined;

export function oracleMethods(): OracleMethods {
  oracle ??= { getTimestamps: defineMethod(ORACLE_SERVICE, 'GetTimestamps', 'GetTimestampsRequestPB', 'GetTimestampsResponsePB') };
  return oracle;
}
