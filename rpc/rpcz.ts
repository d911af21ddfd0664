/**
 * /rpcz (as YugabyteDB's): a server's RPC connections and the calls in flight on each, both ways —
 * inbound (clients and other servers calling this one: what it is working on, and for how long) and
 * outbound (this server calling others: what it waits for). A call stuck behind a partition, a paused
 * peer or a slow disk shows here with its age before it times out. One-way messages (Raft batches) are
 * never in flight: they are handled, or sent, at once.
 */
import { escapeHtml, htmlTable } from './html';
import type { RpcClient, RpcServer } from './types';
import { RPCZ_CALLS_PER_CONNECTION_MAX, type Rpcz, type RpczCall, type RpczConnection } from './rpcz-types';

export * from './rpcz-types';

/** A server's /rpcz: its RPC server's connections (inbound) and its own client's (outbound). */
export function rpczOf(server: RpcServer, client: RpcClient): Rpcz {
  return { inbound: server.rpcz?.() ?? [], outbound: client.rpcz?.() ?? [] };
}

/** A call as the transports keep it, made into its /rpcz row. */
export interface TrackedCall {
  readonly service: string;
  readonly method: string;
  readonly startMs: number;
  readonly timeoutMs: number;
  readonly sent?: boolean;
}

/** The in-flight rows of one connection: the longest-running first, at most RPCZ_CALLS_PER_CONNECTION_MAX. */
export function inFlightRows(calls: Iterable<[number, TrackedCall]>, nowMs: number): RpczCall[] {
  const rows: RpczCall[] = [];
  for (const [callId, c] of calls) {
    rows.push({ callId, service: c.service, method: c.method, elapsedMs: round1(nowMs - c.startMs), timeoutMs: c.timeoutMs, ...(c.sent !== undefined ? { sent: c.sent } : {}) });
  }
  rows.sort((a, b) => b.elapsedMs - a.elapsedMs || a.callId - b.callId);
  return rows.slice(0, RPCZ_CALLS_PER_CONNECTION_MAX);
}

export function round1(ms: number): number {
  return Math.round(Math.max(0, ms) * 10) / 10;
}

export function byRemote(a: RpczConnection, b: RpczConnection): number {
  return a.remote < b.remote ? -1 : a.remote > b.remote ? 1 : 0;
}

function connectionTable(conns: readonly RpczConnection[], outbound: boolean, id: string): string {
  if (conns.length === 0) return `<p>No ${outbound ? 'outbound' : 'inbound'} connections.</p>`;
  const ms = (v: number | undefined): string => (v === undefined ? '' : String(Math.round(v)));
  const headers = [outbound ? 'server' : 'caller', 'state', 'open for ms', 'quiet for ms', outbound ? 'calls made' : 'calls answered', 'in flight', ...(outbound ? ['bytes to write', 'next connect in ms'] : [])];
  const rows = conns.map((c) => [
    c.caller !== undefined ? `${c.caller} (${c.remote})` : c.remote,
    c.state,
    ms(c.openForMs),
    ms(c.quietMs),
    c.calls,
    c.callsInFlight,
    ...(outbound ? [c.outboundBytes ?? 0, c.retryInMs === undefined ? '' : `${ms(c.retryInMs)} (after ${c.connectFailures ?? 0} failed)`] : []),
  ]);
  return htmlTable(headers, rows, { id });
}

function callTable(conns: readonly RpczConnection[], outbound: boolean, id: string): string {
  const calls = conns.flatMap((c) => c.inFlight.map((k) => ({ from: c.caller ?? c.remote, k })));
  if (calls.length === 0) return '<p>None.</p>';
  calls.sort((a, b) => b.k.elapsedMs - a.k.elapsedMs);
  const rows = calls.map(({ from, k }) => [from, k.callId, `${k.service}.${k.method}`, k.elapsedMs.toFixed(1), k.timeoutMs, ...(outbound ? [k.sent === false ? 'queued' : 'sent'] : [])]);
  return htmlTable([outbound ? 'server' : 'caller', 'call id', 'method', 'elapsed ms', outbound ? 'timeout ms' : 'deadline ms', ...(outbound ? ['on the wire'] : [])], rows, { id });
}

export function rpczHtml(z: Rpcz): string {
  const n = (cs: readonly RpczConnection[]): number => cs.reduce((s, c) => s + c.callsInFlight, 0);
  return (
    `<p>This server's RPC connections and the calls in flight on them, the longest-running first (at most ${RPCZ_CALLS_PER_CONNECTION_MAX} per connection). ` +
    `One-way messages (Raft batches) are never in flight. ${escapeHtml(`${n(z.inbound)} inbound and ${n(z.outbound)} outbound call(s) in flight.`)}</p>` +
    '<h2>Inbound: calls this server is answering</h2>' +
    connectionTable(z.inbound, false, 'inbound') +
    callTable(z.inbound, false, 'inbound-calls') +
    '<h2>Outbound: calls this server waits on</h2>' +
    connectionTable(z.outbound, true, 'outbound') +
    callTable(z.outbound, true, 'outbound-calls')
  );
}
