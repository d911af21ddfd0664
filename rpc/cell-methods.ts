/**
 * CellService (rpc/protos/cells.proto): HBase's cell model on one tablet (docs/cells.md), with the
 * TypeScript shapes of its messages as rpc/proto.ts decodes them (see service-methods.ts).
 */
import { defineMethod } from './proto';
import type { MethodDef } from './types';
import type { DocKeyPB, ValuePB } from './service-methods';

export const CELL_SERVICE = 'tessera.CellService';

export interface CellWritePB {
  type?: string;
  columnId?: number;
  family?: string;
  value?: ValuePB;
  ht?: bigint;
  ttlMs?: bigint;
}
export interface CellRowWritePB {
  key?: DocKeyPB;
  cells?: CellWritePB[];
  rowTtlMs?: bigint;
}
export interface WriteCellsRequestPB {
  tabletId?: string;
  rows?: CellRowWritePB[];
  schemaVersion?: number;
  propagatedHt?: bigint;
}
export interface WriteCellsResponsePB {
  writeHt?: bigint;
  propagatedHt?: bigint;
}
export interface ReadCellsRequestPB {
  tabletId?: string;
  schemaVersion?: number;
  propagatedHt?: bigint;
  keys?: DocKeyPB[];
  startKey?: Uint8Array;
  endKey?: Uint8Array;
  limit?: number;
  columnIds?: number[];
  versions?: number;
  hasTimeRange?: boolean;
  minHt?: bigint;
  maxHt?: bigint;
  asOfHt?: bigint;
  raw?: boolean;
}
export interface CellPB {
  columnId?: number;
  type?: string;
  ht?: bigint;
  value?: ValuePB;
  ttlMs?: bigint;
}
export interface CellRowPB {
  key?: DocKeyPB;
  cells?: CellPB[];
}
export interface ReadCellsResponsePB {
  rows?: CellRowPB[];
  readHt?: bigint;
  resumeKey?: Uint8Array;
  propagatedHt?: bigint;
}

export interface CellMethods {
  writeCells: MethodDef<WriteCellsRequestPB, WriteCellsResponsePB>;
  readCells: MethodDef<ReadCellsRequestPB, ReadCellsResponsePB>;
}

let cells: CellMethods | undefined;

export function cellMethods(): CellMethods {
  cells ??= {
    writeCells: defineMethod(CELL_SERVICE, 'WriteCells', 'WriteCellsRequestPB', 'WriteCellsResponsePB'),
    readCells: defineMethod(CELL_SERVICE, 'ReadCells', 'ReadCellsRequestPB', 'ReadCellsResponsePB'),
  };
  return cells;
}
