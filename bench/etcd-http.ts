/**
 * A minimal etcd v3 client over its HTTP/JSON gateway (`/v3/kv/put`, `/v3/kv/range`): keys and values
 * travel base64-encoded; a range without `serializable` is linearizable (etcd's default). One
 * keep-alive agent per process keeps a pool of sockets so each request does not pay a TCP handshake.
 */
import * as http from 'node:http';

/** Sockets kept per endpoint; bounds the pool (requests beyond it queue in the agent). */
const SOCKETS_MAX = 256;
const REQUEST_TIMEOUT_MS = 10_000;
const RESPONSE_BYTES_MAX = 4 * 1024 * 1024;

export class EtcdHttp {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: SOCKETS_MAX, maxFreeSockets: SOCKETS_MAX });

  constructor(private readonly endpoint: string) {}

  async put(key: string, value: Buffer | string): Promise<void> {
    await this.post('/v3/kv/put', { key: b64(key), value: b64(value) });
  }

  /** The value at key (linearizable read), or undefined when absent. */
  async get(key: string): Promise<Buffer | undefined> {
    const r = (await this.post('/v3/kv/range', { key: b64(key) })) as { kvs?: Array<{ value?: string }> };
    const v = r.kvs?.[0]?.value;
    return v === undefined ? undefined : Buffer.from(v, 'base64');
  }

  /** `/v3/maintenance/status`: this member's id and the leader's id (both decimal strings). */
  async status(): Promise<{ memberId: string; leaderId: string }> {
    const r = (await this.post('/v3/maintenance/status', {})) as { header?: { member_id?: string }; leader?: string };
    return { memberId: r.header?.member_id ?? '', leaderId: r.leader ?? '' };
  }

  close(): void {
    this.agent.destroy();
  }

  private post(path: string, body: unknown): Promise<unknown> {
    const data = JSON.stringify(body);
    const url = new URL(path, this.endpoint);
    return new Promise((resolve, reject) => {
      const req = http.request(
        { hostname: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent: this.agent, timeout: REQUEST_TIMEOUT_MS, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } },
        (res) => {
          const chunks: Buffer[] = [];
          let bytes = 0;
          res.on('data', (c: Buffer) => {
            bytes += c.length;
            if (bytes > RESPONSE_BYTES_MAX) {
              req.destroy(new Error(`etcd response over ${RESPONSE_BYTES_MAX} bytes`));
              return;
            }
            chunks.push(c);
          });
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            if (res.statusCode !== 200) return reject(new Error(`etcd ${path}: HTTP ${res.statusCode ?? '?'} ${text.slice(0, 200)}`));
            try {
              resolve(JSON.parse(text) as unknown);
            } catch (e) {
              reject(e instanceof Error ? e : new Error(String(e)));
            }
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`etcd ${path}: no answer within ${REQUEST_TIMEOUT_MS} ms`)));
      req.on('error', reject);
      req.end(data);
    });
  }
}

function b64(v: Buffer | string): string {
  return (typeof v === 'string' ? Buffer.from(v, 'utf8') : v).toString('base64');
}
