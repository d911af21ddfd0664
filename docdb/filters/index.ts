/**
 * docdb/filters: server-side scan filters with seek hints (docs/filters.md) — the AST that travels
 * in a scan request, the expression language the CLI takes, and the evaluators a tablet runs.
 */
export * from '../../common/filter-ast';
export { ReturnCode, type CellFilter, type FilterCell, type FilterRow, type SeekHint } from './evaluator';
export { compileFilter, literalAs, valueText, DEFAULT_FAMILY, type FilterSchema, type FilterColumnType } from './compile';
export { fuzzyMatches, fuzzyNext, type FuzzyPattern } from './row-filters';
export { FILTER_ROWS_EXAMINED_MAX } from './filtered-scan';
export { parseFilterExpression, toFilterAst, expressionError, FILTER_EXPRESSION_CHARS_MAX } from '../../common/filter-expression';
