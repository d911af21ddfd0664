/**
 * What startMaster takes (master-server.ts): a leaf module both the server and its start steps
 * (master-start.ts) import, so neither imports the other back.
 */
import type { Flags } from '../common/flags';
import type { LogRing, Logger } from '../common/log';
import type { Transport } from '../rpc';

export interface MasterOptions {
  flags: Flags;
  /** Default: the WebSocket transport. */
  transport?: Transport;
  log?: Logger;
  logRing?: LogRing;
}
