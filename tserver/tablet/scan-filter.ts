/**
 * The tablet's side of scan filters (docs/filters.md): the request's filter JSON, checked as
 * untrusted input and compiled against this replica's schema into a fresh evaluator for one scan
 * call. Every problem is INVALID_ARGUMENT naming the part (the filter path, the unknown column), so
 * a bad filter from any client fails its scan and nothing else.
 */
import { compileFilter, parseFilterText, type CellFilter } from '../../docdb';
import type { TabletMeta } from './tablet-meta';

export function scanFilter(meta: TabletMeta, filterJson: string | undefined): CellFilter | undefined {
  if (filterJson === undefined || filterJson === '') return undefined;
  return compileFilter(parseFilterText(filterJson), meta.schema);
}
