/** Process-wide hard limits; each names what happens at the limit. */

/** Largest RPC frame accepted or sent; larger frames get MESSAGE_TOO_LARGE (default of rpc_max_message_size). */
export const RPC_MESSAGE_BYTES_MAX_DEFAULT = 64 * 1024 * 1024;
/** Outbound bytes queued per connection before calls fail with BACKPRESSURE. */
export const RPC_OUTBOUND_QUEUE_BYTES_MAX = 256 * 1024 * 1024;
/** Calls in flight per connection before new calls fail with BACKPRESSURE. */
export const RPC_INFLIGHT_CALLS_MAX = 100_000;
