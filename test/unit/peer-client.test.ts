/**
 * rpc/peer-client.ts: the client servers call each other with refuses, as unreachable, the peers on
 * TEST_drop_traffic_peers (lab partitions of local processes), and passes every other call through.
 */
import { describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import { Flags } from '../../common/flags';
import { TEST_DROP_TRAFFIC_PEERS } from '../../common/server-flags';
import { peerClient } from '../../rpc/peer-client';
import type { MethodDef, OnewayDef, RpcClient } from '../../rpc/types';

function recording(): { inner: RpcClient; calls: string[]; sends: string[] } {
  const calls: string[] = [];
  const sends: string[] = [];
  return {
    calls,
    sends,
    inner: {
      call: async <Req, Resp>(address: string, _m: MethodDef<Req, Resp>, _req: Req): Promise<Resp> => {
        calls.push(address);
        return 'answer' as unknown as Resp;
      },
      send: <M>(address: string, _m: OnewayDef<M>, _msg: M): void => {
        sends.push(address);
      },
      close: async () => undefined,
    },
  };
}

const M = {} as MethodDef<unknown, unknown>;
const O = {} as OnewayDef<unknown>;

describe('peerClient', () => {
  it('a peer on TEST_drop_traffic_peers is unreachable (NETWORK_ERROR, nothing sent); others and a healed list pass through', async () => {
    const flags = new Flags();
    const r = recording();
    const c = peerClient(r.inner, flags);
    await expect(c.call('127.0.0.2:9100', M, {})).resolves.toBe('answer');
    flags.set(TEST_DROP_TRAFFIC_PEERS, '127.0.0.2:9100, 127.0.0.2:7100');
    const e = await c.call('127.0.0.2:9100', M, {}).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(DbError);
    expect((e as DbError).code).toBe(ErrorCode.NETWORK_ERROR);
    expect((e as DbError).message).toContain('TEST_drop_traffic_peers');
    c.send('127.0.0.2:7100', O, {});
    await expect(c.call('127.0.0.3:9100', M, {})).resolves.toBe('answer');
    c.send('127.0.0.3:9100', O, {});
    expect(r.calls).toEqual(['127.0.0.2:9100', '127.0.0.3:9100']);
    expect(r.sends).toEqual(['127.0.0.3:9100']);
    // Healed: the flag is read on every call.
    flags.set(TEST_DROP_TRAFFIC_PEERS, '');
    await expect(c.call('127.0.0.2:9100', M, {})).resolves.toBe('answer');
  });
});
