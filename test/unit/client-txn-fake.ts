/**
 * A scripted fake cluster for the client's transaction tests (no sockets): the master's locations of
 * a 2-tablet table `demo` and of the status tablet, handlers by "Service.Method", a log of every
 * call; coordinator calls reach only the status tablet's leader, others answer with a hint.
 */
import { afterEach } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import type { MethodDef, RpcClient, Transport } from '../../rpc/types';
import { TesseraClient } from '../../client/tessera-client';

export type Req = Record<string, unknown>;
export type Handler = (req: Req, address: string, timeoutMs?: number) => unknown;

const DEMO = {
  table: {
    id: 'demo-id',
    name: 'demo',
    schema: { columns: [{ name: 'id', id: 1, type: 'int64', nullable: false }, { name: 'value', id: 2, type: 'string', nullable: true }], hashColumns: ['id'], rangeColumns: [] },
  },
  tablets: [
    { tabletId: 'd0', partition: { start: 0, end: 32768 }, replicas: [{ tserverUuid: 'a', rpcAddress: 'ts-a', role: 'LEADER' }] },
    { tabletId: 'd1', partition: { start: 32768, end: 65536 }, replicas: [{ tserverUuid: 'b', rpcAddress: 'ts-b', role: 'LEADER' }] },
  ],
};
const STATUS = {
  table: { id: 'txn-id', name: 'transactions' },
  tablets: [{ tabletId: 's0', partition: { start: 0, end: 65536 }, replicas: [{ tserverUuid: 'a', rpcAddress: 'ts-a', role: 'FOLLOWER' }, { tserverUuid: 'b', rpcAddress: 'ts-b', role: 'FOLLOWER' }] }],
};

/** A fake cluster: handlers by "Service.Method", and a log of every call. */
export class FakeCluster {
  readonly calls: Array<{ method: string; address: string; req: Req }> = [];
  readonly handlers = new Map<string, Handler>();
  statusLeader = 'ts-b';

  constructor() {
    this.on('MasterService.ListTables', () => ({ tables: [] }));
    this.on('MasterService.GetTableLocations', (r) => (r['name'] === 'demo' ? DEMO : r['name'] === 'transactions' ? STATUS : { tablets: [] }));
    this.on('TransactionCoordinatorService.CreateTransaction', () => ({ readHt: 1000n, propagatedHt: 1000n }));
    this.on('TransactionCoordinatorService.HeartbeatTransaction', () => ({ status: 'PENDING' }));
    this.on('TransactionCoordinatorService.CommitTransaction', () => ({ commitHt: 2000n }));
    this.on('TransactionCoordinatorService.AbortTransaction', () => ({ status: 'ABORTED' }));
    this.on('TabletServerService.Write', () => ({ writeHt: 1500n, propagatedHt: 1500n }));
    this.on('TabletServerService.Read', () => ({ rows: [{ key: { hash: 1, hashed: [{ int64Value: 1n }] }, columns: [{ columnId: 2, value: { stringValue: 'own' } }] }], found: [true], readHt: 1000n }));
    this.on('TabletServerService.Scan', (r) => ({ rows: [], readHt: r['readHt'] }));
  }

  on(method: string, h: Handler): void {
    this.handlers.set(method, h);
  }

  count(method: string): number {
    return this.calls.filter((c) => c.method === method).length;
  }

  transport(): Transport {
    const rpc: RpcClient = {
      call: async <Rq, Rs>(address: string, m: MethodDef<Rq, Rs>, req: Rq, opts?: { timeoutMs?: number }): Promise<Rs> => {
        const method = `${m.service.replace(/^tessera\./, '')}.${m.method}`;
        this.calls.push({ method, address, req: req as Req });
        await Promise.resolve();
        // Coordinator calls reach only the status tablet's leader; others answer with a hint.
        if (method.startsWith('TransactionCoordinatorService.') && address !== this.statusLeader) {
          throw new DbError(ErrorCode.NOT_THE_LEADER, 'not the leader', { leaderHint: this.statusLeader });
        }
        const h = this.handlers.get(method);
        if (!h) throw new DbError(ErrorCode.UNKNOWN_METHOD, method);
        return h(req as Req, address, opts?.timeoutMs) as Rs;
      },
      send: () => undefined,
      close: async () => undefined,
    };
    return { createClient: () => rpc, createServer: () => { throw new Error('no servers here'); } };
  }
}

export const clients: TesseraClient[] = [];
export async function connect(f: FakeCluster, heartbeatUsec = 1_000_000): Promise<TesseraClient> {
  const c = await TesseraClient.connect({ masterAddresses: ['m'], transport: f.transport(), timeoutMs: 2000, transactionHeartbeatUsec: heartbeatUsec });
  clients.push(c);
  return c;
}
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
});

export async function waitFor(cond: () => boolean, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}
