import { runTransportCompliance, type TransportHarness } from './rpc-transport-compliance';
import { WsTransport } from '../../rpc/ws-transport';

const UNTIL_MS_MAX = 10_000;

export function wsHarness(): TransportHarness {
  return {
    transport: (_node, opts) => new WsTransport({ messageBytesMax: opts?.messageBytesMax }),
    bindHost: () => '127.0.0.1',
    drive: (p) => p,
    until: async (cond, what) => {
      const end = performance.now() + UNTIL_MS_MAX;
      while (!cond()) {
        if (performance.now() > end) throw new Error(`${what} did not happen within ${UNTIL_MS_MAX} ms`);
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    pause: (ms) => new Promise((r) => setTimeout(r, ms)),
    nowMs: () => performance.now(),
    cleanup: async () => undefined,
  };
}

runTransportCompliance('ws', wsHarness);
