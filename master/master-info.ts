/** One master as /masters and ListMasters show it. */
export interface MasterInfo {
  uuid: string;
  rpcAddress: string;
  webAddress: string;
  /** LEADER | FOLLOWER | UNREACHABLE */
  role: string;
  term: number;
}
