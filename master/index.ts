/** Public API of the master. */
export { startMaster, masterMain, type Master, type MasterOptions } from './master-server';
export { CatalogManager, type TabletServerJson, type TableLocationJson } from './catalog-manager';
export { SysCatalog, SYS_CATALOG_GROUP_ID } from './sys-catalog';
export { applyCatalogOp, emptyCatalog, tableByName, tabletsOf } from './catalog-state';
export type * from './catalog-types';
export { validateCreateTable, hashPartitions } from './ddl-validation';
export { placeNewTablets, planReplacements, planLeaderMoves, type Move, type TServerLoad, type TabletView } from './placement';
export type { MasterInfo } from './master-info';
export * from './master-flags';
