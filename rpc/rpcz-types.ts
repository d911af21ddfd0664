/**
 * The shapes of /rpcz (rpcz.ts): a leaf, so the transport interfaces of types.ts can name them
 * without importing the page code that imports them back.
 */
/** Calls listed per connection (the longest-running first); `callsInFlight` counts them all. */
export const RPCZ_CALLS_PER_CONNECTION_MAX = 100;

export interface RpczCall {
  callId: number;
  service: string;
  method: string;
  /** ms since the call was made (outbound) or its request arrived (inbound). */
  elapsedMs: number;
  /** Outbound: the call's whole time before TIMED_OUT. Inbound: the deadline its caller gave. */
  timeoutMs: number;
  /** Outbound only: handed to the socket (false: queued while the connection opens). */
  sent?: boolean;
}

export type RpczState = 'open' | 'connecting' | 'backing off' | 'idle';

export interface RpczConnection {
  /** Inbound: the caller's ip:port. Outbound: the server's address as called. */
  remote: string;
  /** Inbound: who the caller said it is when it connected (`tserver 127.0.0.2:9100`, `client pid 123`). */
  caller?: string;
  state: RpczState;
  /** ms since this connection (the current socket) opened. */
  openForMs?: number;
  /** ms since anything (a frame, a ping or pong) was last heard on it. */
  quietMs?: number;
  /** Inbound: calls answered on this connection; outbound: calls made to this address. */
  calls: number;
  callsInFlight: number;
  /** The calls in flight, the longest-running first (at most RPCZ_CALLS_PER_CONNECTION_MAX). */
  inFlight: RpczCall[];
  /** Outbound: bytes waiting to be written (queued while connecting, or in the socket's buffer). */
  outboundBytes?: number;
  /** Outbound, backing off after failed connects: the failures in a row, and ms until the next try. */
  connectFailures?: number;
  retryInMs?: number;
}

export interface Rpcz {
  inbound: RpczConnection[];
  outbound: RpczConnection[];
}
