import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common';
import { defineMethod, lookupMessageType, protoCodec, protoDir, protoRoot } from '../../rpc/proto';
import type { EchoPB, EchoReq } from './rpc-transport-compliance';

describe('rpc/proto', () => {
  it('proto: every .proto file in rpc/protos is loaded into one root', () => {
    const files = fs.readdirSync(protoDir()).filter((f) => f.endsWith('.proto'));
    expect(files).toContain('rpc.proto');
    expect(protoRoot().lookupType('tessera.Frame')).toBeDefined();
    expect(protoRoot().lookupType('tessera.ErrorPB')).toBeDefined(); // common.proto
    expect(() => lookupMessageType('tessera.NoSuchType')).toThrow(DbError);
  });

  it('proto: 64-bit fields decode as bigint at every depth, defaults fill missing scalars, repeated are arrays', () => {
    const c = protoCodec<EchoPB>('tessera.EchoPB');
    const req: EchoReq = { children: [{ children: [{ u: 2n ** 64n - 1n, stamps: [3n] }] }], inner: { sf: -1n } };
    const r = c.decode(c.encode(req as EchoPB));
    const deep = r.children[0]!.children[0]!;
    expect(deep.u).toBe(2n ** 64n - 1n);
    expect(deep.stamps).toEqual([3n]);
    expect(deep.n).toBe(0n);
    expect(deep.i64).toBe(0n);
    expect(deep.text).toBe('');
    expect(deep.mood).toBe('ECHO_PLAIN');
    expect(deep.children).toEqual([]);
    expect(deep.data.length).toBe(0);
    expect(deep.inner).toBeUndefined();
    expect(r.inner!.sf).toBe(-1n);
    expect(typeof r.inner!.u).toBe('bigint');
    // Numbers and decimal strings are accepted for 64-bit fields on the way in.
    const n = c.decode(c.encode({ n: 5, u: '18446744073709551615' } as unknown as EchoPB));
    expect(n.n).toBe(5n);
    expect(n.u).toBe(2n ** 64n - 1n);
  });

  it('proto: bytes that do not decode give MALFORMED_FRAME; unencodable objects give INVALID_ARGUMENT', () => {
    const c = protoCodec<EchoPB>('tessera.EchoPB');
    expect(() => c.decode(Uint8Array.from([0x0a, 0x7f]))).toThrow(expect.objectContaining({ code: ErrorCode.MALFORMED_FRAME }));
    expect(() => c.encode({ inner: 5 } as unknown as EchoPB)).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }));
  });

  it('proto: defineMethod accepts short type names in package tessera', () => {
    const m = defineMethod<EchoReq, EchoPB>('S', 'M', 'EchoPB', 'tessera.EchoPB');
    expect(m.resp.decode(m.req.encode({ text: 'x' })).text).toBe('x');
  });
});
