/** Flags of the RPC layer (YugabyteDB spelling where it has the same knob). */
import { defineFlag, RPC_MESSAGE_BYTES_MAX_DEFAULT } from '../common';

export const RPC_MAX_MESSAGE_SIZE = defineFlag({
  name: 'rpc_max_message_size',
  type: 'int',
  default: RPC_MESSAGE_BYTES_MAX_DEFAULT,
  help: 'Largest RPC message (payload bytes) sent or accepted; larger ones fail with MESSAGE_TOO_LARGE.',
  validate: (v) => (v >= 1024 && v <= 1024 * 1024 * 1024 ? undefined : 'between 1 KiB and 1 GiB'),
});

export const RPC_DEFAULT_TIMEOUT_MS = defineFlag({
  name: 'rpc_default_timeout_ms',
  type: 'int',
  default: 60_000,
  help: 'Deadline of an RPC call that does not give its own timeoutMs.',
  tags: ['runtime'],
  validate: (v) => (v > 0 ? undefined : 'positive'),
});

export const RPC_CONNECT_TIMEOUT_MS = defineFlag({
  name: 'rpc_connect_timeout_ms',
  type: 'int',
  default: 5_000,
  help: 'Longest a WebSocket connect may take before queued calls fail with NETWORK_ERROR.',
  validate: (v) => (v > 0 ? undefined : 'positive'),
});

export const RPC_TCP_CONNECT_TIMEOUT_MS = defineFlag({
  name: 'rpc_tcp_connect_timeout_ms',
  type: 'int',
  default: 1_000,
  help: 'Longest the TCP part of a connect (SYN answered by the peer\'s kernel) may take; an attempt whose SYN stayed unanswered this long (a network cut) is given up and the next call tries afresh at once, without back-off, so a healed network is noticed within about this long instead of after TCP\'s own SYN retransmissions (1, 3, 7 s …). The WebSocket upgrade after it still has rpc_connect_timeout_ms. 0: only rpc_connect_timeout_ms applies.',
  validate: (v) => (v === 0 || (v >= 100 && v <= 60_000) ? undefined : '0, or between 100 and 60000'),
});

export const RPC_RECONNECT_BACKOFF_MAX_MS = defineFlag({
  name: 'rpc_reconnect_backoff_max_ms',
  type: 'int',
  default: 2_000,
  help: 'Cap of the exponential back-off between failed connects to one address (calls meanwhile fail fast).',
  validate: (v) => (v >= 0 ? undefined : 'non-negative'),
});

export const RPC_KEEPALIVE_INTERVAL_MS = defineFlag({
  name: 'rpc_keepalive_interval_ms',
  type: 'int',
  default: 2_000,
  help: 'An RPC connection that heard nothing from the other end for this long sends a WebSocket ping (answered by the other end\'s WebSocket layer); clients and servers both do. 0 turns keepalive off, and with it rpc_connection_timeout_ms.',
  validate: (v) => (v >= 0 ? undefined : 'non-negative'),
});

export const RPC_CONNECTION_TIMEOUT_MS = defineFlag({
  name: 'rpc_connection_timeout_ms',
  type: 'int',
  default: 15_000,
  help: 'An RPC connection whose keepalive ping stayed unanswered (no pong, no frame) for this long is closed: on a client its calls fail with NETWORK_ERROR and the next call connects afresh; a server drops the dead client. An end held up for less (paused, a long GC) keeps its connections. A peer cut off by a network partition otherwise keeps the connection open while TCP backs off its retransmissions, and traffic resumes only at the next retransmission after the heal (tens of seconds after a long cut).',
  validate: (v) => (v >= 1_000 ? undefined : 'at least 1000 ms'),
});
