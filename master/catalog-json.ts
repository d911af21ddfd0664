/** The catalog manager's console pages' JSON (the master's /api/v1/…; master-web.ts renders them). */
import type { ColumnFamily } from '../common/column-families';

export interface TabletServerJson {
  uuid: string;
  rpcAddress: string;
  webAddress: string;
  alive: boolean;
  lastHeartbeatMsAgo: number;
  tablets: number;
  leaders: number;
  placementZone: string;
  rssBytes: number;
}

/** The master console's overview (home page and /api/v1). */
export interface ClusterSummaryJson {
  tabletServersAlive: number;
  tabletServersDead: number;
  userTables: number;
  systemTables: number;
  tablets: number;
  /** Tablets no live tserver reports leading (an election under way, or a majority down). */
  tabletsWithoutLeader: number;
  /** Tablets with fewer voters on live tservers than their replication factor (being re-replicated, or not yet). */
  tabletsShortOfReplicas: number;
}

export interface TableLocationJson {
  id: string;
  name: string;
  /** ALTER TABLE: the catalog's schema version and how many tablets' leaders serve it. */
  schemaVersion: number;
  columns: Array<{ name: string; id: number; type: string; nullable: boolean; family?: string }>;
  /** Column families with their retention (docs/cells.md). */
  families: ColumnFamily[];
  tabletsOnSchemaVersion: number;
  tablets: Array<{ tabletId: string; partition: { start: number; end: number; keyStart?: string; keyEnd?: string }; replicas: Array<{ tserverUuid: string; rpcAddress: string; role: string }> }>;
}
