/**
 * The master console's /oracle page and its JSON twin /api/v1/oracle: the timestamp oracle's
 * persisted high-water mark (as a timestamp and as wall time), the next timestamp, and its rate
 * (docs/percolator.md). Only the leader serves timestamps; a follower answers NOT_THE_LEADER.
 */
import { DbError, ErrorCode } from '../common/errors';
import { wallMsOfTs } from '../common/oracle-ts';
import { htmlTable } from '../rpc';
import type { WebServer } from '../rpc';
import type { TimestampOracle } from './timestamp-oracle';

export interface OracleWebDeps {
  web: WebServer;
  oracle: TimestampOracle;
  /** The persisted mark as the catalog has it (also on a leader that has not served yet). */
  persistedBound(): bigint;
  isLeader(): boolean;
  rangeMs(): number;
}

export interface OracleJson {
  highWaterTs: string;
  highWaterWallTime: string;
  nextTs: string;
  servedSinceLeader: number;
  reservations: number;
  ratePerSec: number;
  rangeMs: number;
}

export function registerOraclePage(d: OracleWebDeps): void {
  const json = (): OracleJson => {
    if (!d.isLeader()) throw new DbError(ErrorCode.NOT_THE_LEADER, 'this master is not the leader: the timestamp oracle runs on the leader');
    const s = d.oracle.status();
    const hw = s.boundTs > d.persistedBound() ? s.boundTs : d.persistedBound();
    return {
      highWaterTs: hw.toString(),
      highWaterWallTime: hw > 0n ? new Date(wallMsOfTs(hw)).toISOString() : '',
      nextTs: s.nextTs.toString(),
      servedSinceLeader: s.served,
      reservations: s.reservations,
      ratePerSec: s.ratePerSec,
      rangeMs: d.rangeMs(),
    };
  };
  d.web.route('/oracle', {
    title: 'Timestamp oracle',
    nav: 'Oracle',
    json: () => Promise.resolve(json()),
    html: () => {
      const j = json();
      return Promise.resolve(
        htmlTable(
          ['High-water mark (persisted)', 'As wall time', 'Next timestamp', 'Rate (ts/s, last 10 s)', 'Served since leader', 'Reservations', 'Range (ms)'],
          [[j.highWaterTs, j.highWaterWallTime, j.nextTs, j.ratePerSec.toFixed(0), j.servedSinceLeader, j.reservations, j.rangeMs]],
          { id: 'oracle' },
        ),
      );
    },
  });
}
