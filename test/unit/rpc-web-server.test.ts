import * as fs from 'node:fs';
import * as http from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ALLOW_UNSAFE_FLAG_CHANGES, DbError, defineFlag, ErrorCode, Flags, LogRing } from '../../common';
import { htmlTable, raw } from '../../rpc/html';
import { toJson } from '../../rpc/json';
import { Metrics } from '../../rpc/metrics';
import { formatUptime, WebServer, type Threadz } from '../../rpc/web-server';

const TEST_WEB_FLAG = defineFlag({ name: 'TEST_web_kit_sleep_ms', type: 'int', default: 0, help: 'test-only flag for the console kit tests' });
const RUNTIME_FLAG = defineFlag({ name: 'web_kit_runtime_knob', type: 'int', default: 5, help: 'a runtime flag', tags: ['runtime'] });
const STATIC_FLAG = defineFlag({ name: 'web_kit_static_knob', type: 'string', default: 'a', help: 'a non-runtime flag' });

interface Reply {
  status: number;
  type: string;
  body: string;
}

function request(address: string, path: string, opts: { method?: string; body?: string | Buffer } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const [host, port] = address.split(':');
    const req = http.request({ host, port: Number(port), path, method: opts.method ?? 'GET', headers: { 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

const json = (r: Reply): Record<string, unknown> => JSON.parse(r.body) as Record<string, unknown>;

describe('console kit (rpc/web-server)', () => {
  let web: WebServer;
  let flags: Flags;
  let metrics: Metrics;
  beforeEach(async () => {
    flags = new Flags();
    const ring = new LogRing();
    ring.push('{"msg":"hello <log>"}');
    metrics = new Metrics({ defaultLabels: { server: 'ts-1' } });
    metrics.counter('rpc_calls_total', 'calls', ['method']).inc({ method: 'Write' }, 3);
    web = new WebServer({
      kind: 'tserver',
      port: 0,
      flags,
      logRing: ring,
      metrics,
      memTrackers: () => ({ id: 'server', currentBytes: 100, peakBytes: 200, children: [{ id: 'Tablets', currentBytes: 60, peakBytes: 70 }] }),
    });
    web.route('/tablets', {
      title: 'Tablets',
      nav: 'Tablets',
      html: () => htmlTable(['id', 'note'], [['t-1', '<script>'], ['t-2', raw('<i>ok</i>')]]),
      json: () => ({ tablets: [{ tabletId: 't-1', term: 2n ** 60n }] }),
    });
    web.route('/not-leader', { json: () => { throw new DbError(ErrorCode.NOT_THE_LEADER, 'this master is not the leader'); } });
    web.route('/too-old', { json: () => { throw new DbError(ErrorCode.SNAPSHOT_TOO_OLD, 'read below the history floor'); } });
    web.route('/boom', { html: () => Promise.reject(new Error('kaput')), json: () => { throw new DbError(ErrorCode.INTERNAL, 'kaput', { where: 'json' }); } });
    web.post('/api/v1/echo', (body) => ({ got: body }));
    await web.start();
  });
  afterEach(() => web.stop());

  it('web: binds 127.0.0.1 by default and shows kind and address in the title and nav', async () => {
    expect(web.address.startsWith('127.0.0.1:')).toBe(true);
    const r = await request(web.address, '/tablets');
    expect(r.status).toBe(200);
    expect(r.type).toContain('text/html');
    expect(r.body).toContain(`<title>tserver ${web.address}`);
    expect(r.body).toContain('href="/tablets"');
    expect(r.body).toContain('&lt;script&gt;'); // escaped
    expect(r.body).toContain('<i>ok</i>'); // raw stays raw
  });

  it('web: the home page shows the overview first, then every page; its JSON twin (/api/v1) has the same facts', async () => {
    const bare = await request(web.address, '/api/v1');
    expect((json(bare)['overview'] as Record<string, unknown>)['uptimeMs']).toBeTypeOf('number');
    web.setOverview(() => [
      { key: 'role', label: 'Role', value: 'LEADER' },
      { key: 'dead', label: 'Dead <servers>', value: 2, html: raw('<b>2</b>') },
      { key: 'peers', label: 'Peers', value: ['a', 'b'] },
    ]);
    const home = await request(web.address, '/');
    expect(home.status).toBe(200);
    expect(home.body.indexOf('<h2>Overview</h2>')).toBeLessThan(home.body.indexOf('<h2>Pages</h2>'));
    expect(home.body).toContain('<td>Role</td><td>LEADER</td>');
    expect(home.body).toContain('<td>Dead &lt;servers&gt;</td><td><b>2</b></td>');
    expect(home.body).toContain('<td>Peers</td><td>[&quot;a&quot;,&quot;b&quot;]</td>');
    expect(home.body).toMatch(/<table id="overview"><tbody>/); // a key/value table: no header row
    expect(home.body).toContain('<a href="/tablets">Tablets</a>');
    for (const path of ['/api/v1', '/api/v1/']) {
      const r = json(await request(web.address, path));
      expect(r['kind']).toBe('tserver');
      expect(r['address']).toBe(web.address);
      const o = r['overview'] as Record<string, unknown>;
      expect(o).toMatchObject({ role: 'LEADER', dead: 2, peers: ['a', 'b'] });
      expect(o['uptimeMs']).toBeTypeOf('number');
      expect(r['pages']).toContainEqual({ path: '/tablets', title: 'Tablets', json: '/api/v1/tablets' });
      expect(r['pages']).toContainEqual({ path: '/prometheus-metrics', title: 'Prometheus metrics' });
    }
  });

  it('web: uptime reads in the largest two units', () => {
    expect(formatUptime(9_400)).toBe('9 s');
    expect(formatUptime(252_000)).toBe('4 min 12 s');
    expect(formatUptime(7_500_000)).toBe('2 h 5 min');
    expect(formatUptime(273_600_000)).toBe('3 d 4 h');
    expect(formatUptime(-5)).toBe('0 s');
  });

  it('web: JSON twin under /api/v1 serializes bigint as a string', async () => {
    const r = await request(web.address, '/api/v1/tablets');
    expect(r.status).toBe(200);
    expect(json(r)).toEqual({ tablets: [{ tabletId: 't-1', term: String(2n ** 60n) }] });
  });

  it('web: /api/v1/varz lists every flag with value, default, changed and tags', async () => {
    flags.setFromString(RUNTIME_FLAG.name, '9');
    const r = json(await request(web.address, '/api/v1/varz'));
    const list = r['flags'] as Array<Record<string, unknown>>;
    const knob = list.find((f) => f['name'] === RUNTIME_FLAG.name)!;
    expect(knob).toMatchObject({ value: 9, default: 5, changed: true, tags: ['runtime'] });
    const test = list.find((f) => f['name'] === TEST_WEB_FLAG.name)!;
    expect(test['changed']).toBe(false);
    expect(test['tags']).toEqual(expect.arrayContaining(['test', 'hidden']));
  });

  it('web: /varz lists TEST_ flags in a separate section; ?raw prints --name=value lines', async () => {
    const page = (await request(web.address, '/varz')).body;
    const hiddenAt = page.indexOf('id="hidden-flags"');
    expect(hiddenAt).toBeGreaterThan(0);
    expect(page.indexOf(TEST_WEB_FLAG.name)).toBeGreaterThan(hiddenAt);
    expect(page.indexOf(STATIC_FLAG.name)).toBeLessThan(hiddenAt);
    const rawPage = await request(web.address, '/varz?raw');
    expect(rawPage.type).toContain('text/plain');
    expect(rawPage.body).toContain(`--${STATIC_FLAG.name}=a\n`);
  });

  it('web: POST /api/v1/flags changes runtime flags; non-runtime needs force (NOT_SAFE) and --allow_unsafe_flag_changes (PERMISSION_DENIED), bad values are 400', async () => {
    const ok = await request(web.address, '/api/v1/flags', { method: 'POST', body: JSON.stringify({ name: RUNTIME_FLAG.name, value: '11' }) });
    expect(ok.status).toBe(200);
    expect(json(ok)).toEqual({ name: RUNTIME_FLAG.name, value: 11 });
    expect(flags.get(RUNTIME_FLAG)).toBe(11);
    const unsafe = await request(web.address, '/api/v1/flags', { method: 'POST', body: JSON.stringify({ name: STATIC_FLAG.name, value: 'b' }) });
    expect(unsafe.status).toBe(400);
    expect(json(unsafe)['code']).toBe(ErrorCode.NOT_SAFE);
    // force is refused unless the server was started with --allow_unsafe_flag_changes.
    const refused = await request(web.address, '/api/v1/flags', { method: 'POST', body: JSON.stringify({ name: STATIC_FLAG.name, value: 'b', force: true }) });
    expect(refused.status).toBe(403);
    expect(json(refused)['code']).toBe(ErrorCode.PERMISSION_DENIED);
    flags.setFromString(ALLOW_UNSAFE_FLAG_CHANGES.name, 'true');
    const forced = await request(web.address, '/api/v1/flags', { method: 'POST', body: JSON.stringify({ name: STATIC_FLAG.name, value: 'b', force: true }) });
    expect(json(forced)).toEqual({ name: STATIC_FLAG.name, value: 'b' });
    const bad = await request(web.address, '/api/v1/flags', { method: 'POST', body: JSON.stringify({ name: RUNTIME_FLAG.name, value: 'x' }) });
    expect(bad.status).toBe(400);
    expect(json(bad)['code']).toBe(ErrorCode.INVALID_ARGUMENT);
    const unknown = await request(web.address, '/api/v1/flags', { method: 'POST', body: JSON.stringify({ name: 'no_such_flag', value: 1 }) });
    expect(json(unknown)['code']).toBe(ErrorCode.INVALID_ARGUMENT);
  });

  it('web: malformed JSON body is 400, a body over 1 MiB is 413, and the server keeps answering', async () => {
    const bad = await request(web.address, '/api/v1/echo', { method: 'POST', body: '{"a":' });
    expect(bad.status).toBe(400);
    expect(json(bad)['code']).toBe(ErrorCode.INVALID_ARGUMENT);
    const big = await request(web.address, '/api/v1/echo', { method: 'POST', body: Buffer.alloc(1024 * 1024 + 10, 0x20) });
    expect(big.status).toBe(413);
    const good = await request(web.address, '/api/v1/echo', { method: 'POST', body: '{"a":1}' });
    expect(json(good)).toEqual({ got: { a: 1 } });
  });

  it('web: unknown paths are 404 (page or JSON NOT_FOUND); handler errors are 500 with DbError JSON', async () => {
    const page = await request(web.address, '/nope');
    expect(page.status).toBe(404);
    expect(page.type).toContain('text/html');
    const api = await request(web.address, '/api/v1/nope');
    expect(api.status).toBe(404);
    expect(json(api)['code']).toBe('NOT_FOUND');
    const boom = await request(web.address, '/api/v1/boom');
    expect(boom.status).toBe(500);
    expect(json(boom)).toMatchObject({ code: 'INTERNAL', message: 'kaput', details: { where: 'json' } });
    const boomPage = await request(web.address, '/boom');
    expect(boomPage.status).toBe(500);
    expect(boomPage.body).toContain('kaput');
    // A follower's answer is not a failure: 503 with the code (the caller retries or follows the hint).
    const follower = await request(web.address, '/api/v1/not-leader');
    expect(follower.status).toBe(503);
    expect(json(follower)).toMatchObject({ code: 'NOT_THE_LEADER' });
    // Versions collected by history GC are gone for good: 410.
    const tooOld = await request(web.address, '/api/v1/too-old');
    expect(tooOld.status).toBe(410);
    expect(json(tooOld)).toMatchObject({ code: 'SNAPSHOT_TOO_OLD' });
  });

  it('web: healthz, logs, metrics (JSON), prometheus-metrics and mem-trackers', async () => {
    expect(json(await request(web.address, '/api/v1/healthz'))).toMatchObject({ ok: true, kind: 'tserver' });
    expect((await request(web.address, '/healthz')).status).toBe(200);
    const logs = await request(web.address, '/logs');
    expect(logs.body).toContain('hello &lt;log&gt;');
    expect(json(await request(web.address, '/api/v1/logs'))['lines']).toEqual(['{"msg":"hello <log>"}']);
    const m = await request(web.address, '/metrics');
    expect(m.type).toContain('application/json');
    expect(JSON.stringify(JSON.parse(m.body))).toContain('rpc_calls_total');
    const prom = await request(web.address, '/prometheus-metrics');
    expect(prom.body).toContain('rpc_calls_total{method="Write",server="ts-1"} 3');
    const mt = json(await request(web.address, '/api/v1/mem-trackers'));
    expect(mt).toMatchObject({ id: 'server', currentBytes: 100, children: [{ id: 'Tablets', peakBytes: 70 }] });
    expect((await request(web.address, '/mem-trackers')).body).toContain('Tablets');
  });

  it('web: /threadz lists this process threads with their CPU, the main thread as kind main', async () => {
    const t = json(await request(web.address, '/api/v1/threadz')) as unknown as Threadz;
    expect(t.pid).toBe(process.pid);
    expect(t.byKind.map((k) => k.kind)).toEqual(['main', 'rocksdb', 'other']);
    const page = await request(web.address, '/threadz');
    expect(page.status).toBe(200);
    if (!fs.existsSync('/proc/self/task')) {
      process.stdout.write('SKIP /threadz thread checks: no /proc on this machine\n');
      expect(t.available).toBe(false);
      expect(page.body).toContain('no /proc');
      return;
    }
    expect(t.available).toBe(true);
    const main = t.threads.find((r) => r.tid === process.pid);
    expect(main?.kind).toBe('main');
    expect(main!.userSeconds + main!.systemSeconds, 'this test process has run JavaScript').toBeGreaterThan(0);
    expect(t.byKind[0]).toMatchObject({ kind: 'main', threads: 1 });
    // Node's libuv and V8 threads are there too, as other.
    expect(t.byKind[2]!.threads).toBeGreaterThan(0);
    expect(page.body).toContain('the event loop (all JavaScript');
    expect(page.body).toContain(`<td>${process.pid}</td>`);
    // The home page lists it.
    expect((await request(web.address, '/')).body).toContain('/threadz');
  });

  it('web: two servers in one process keep separate metrics registries', async () => {
    const other = new Metrics();
    other.counter('rpc_calls_total', 'calls', ['method']).inc({ method: 'Read' });
    expect(await other.prometheus()).not.toContain('Write');
    expect(await metrics.prometheus()).not.toContain('Read');
  });

  it('web: toJson writes bigint as decimal strings and bytes as hex', () => {
    expect(toJson({ a: 1n, b: [2n], c: Buffer.from([1, 255]), d: Uint8Array.from([16]) })).toBe('{"a":"1","b":["2"],"c":"01ff","d":"10"}');
  });
});
