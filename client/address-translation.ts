/**
 * Address translation for clients outside the servers' network. Servers advertise the addresses
 * their peers use (a Docker lab's tserver says `n1:9100`, a name only the lab network resolves); the
 * master hands those out in table locations and NOT_THE_LEADER hints. A client on the host reaches
 * the same server at another address (a published port, `127.0.0.1:19101`), so it keeps the
 * advertised addresses everywhere (caches, leader hints, comparisons) and translates only at the
 * moment it dials: one wrapper around the RpcClient covers the master proxy, tablet invoker, status
 * tablet proxy and the admin commands that reuse the connection pool.
 */
import type { CallOptions, MethodDef, OnewayDef, RpcClient } from '../rpc';

export type AddressTranslator = (address: string) => string;

/** The translator for ConnectOptions: a map of advertised host:port -> reachable host:port, or a function; undefined when neither is given. */
export function addressTranslator(o: { addressMap?: Record<string, string>; translateAddress?: AddressTranslator }): AddressTranslator | undefined {
  const map = o.addressMap && Object.keys(o.addressMap).length > 0 ? new Map(Object.entries(o.addressMap)) : undefined;
  const fn = o.translateAddress;
  if (!map && !fn) return undefined;
  // The map wins for the addresses it names; the function sees the rest.
  return (a) => map?.get(a) ?? (fn ? fn(a) : a);
}

/** An RpcClient that dials translate(address) for every call and one-way send. */
export function translatingRpcClient(inner: RpcClient, translate: AddressTranslator): RpcClient {
  return {
    call<Req, Resp>(address: string, m: MethodDef<Req, Resp>, req: Req, opts?: CallOptions): Promise<Resp> {
      return inner.call(translate(address), m, req, opts);
    },
    send<M>(address: string, m: OnewayDef<M>, msg: M): void {
      inner.send(translate(address), m, msg);
    },
    close: () => inner.close(),
  };
}
