/**
 * Frames sent on one WebSocket in a burst — several during one callback and the microtasks it runs —
 * leave the process in one writev(2) instead of one each. The first frame of a callback goes out at
 * once (a lone answer waits for nothing); a second one to the same socket corks it, and the socket is
 * uncorked when the microtasks already queued have run. On loopback a send's kernel cost is mostly per
 * packet (the receiver's TCP processing runs in the sender's syscall), so fewer, fuller writes are
 * cheaper for both ends.
 */
import type { WebSocket } from 'ws';

interface Corkable {
  cork(): void;
  uncork(): void;
  destroyed?: boolean;
}

/** Sockets written to in this callback: false = sent once, true = corked since. */
const touched = new Map<Corkable, boolean>();

function flush(): void {
  for (const [s, isCorked] of touched) if (isCorked) s.uncork();
  touched.clear();
}

/** ws.send, coalesced with the other sends of this callback on the same socket. */
export function sendCoalesced(ws: WebSocket, bytes: Uint8Array): void {
  // ws keeps its net.Socket in `_socket` (stable across ws 7 and 8; there is no public accessor).
  const socket = (ws as unknown as { _socket?: Corkable })._socket;
  if (socket && !socket.destroyed) {
    const state = touched.get(socket);
    if (state === undefined) {
      if (touched.size === 0) queueMicrotask(flush);
      touched.set(socket, false);
    } else if (!state) {
      socket.cork();
      touched.set(socket, true);
    }
  }
  ws.send(bytes, { binary: true });
}
