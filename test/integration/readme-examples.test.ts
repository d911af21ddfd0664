/**
 * The README's client-library examples are programs, not sketches: each block marked
 * `<!-- README example: NAME ... -->` is taken out of README.md, compiled as TypeScript, pointed at a
 * real 3-tserver cluster instead of 127.0.0.1:7100, and run. A line `await EXPR; // LITERAL` whose
 * comment is an object literal (optionally followed by "or ...") is checked: EXPR must equal it.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DbError, ErrorCode, TesseraClient } from '../../index';
import { ProcCluster } from './cluster-harness';

const README = path.resolve(__dirname, '../../README.md');
let cluster: ProcCluster | undefined;

/** The TypeScript of the block marked `README example: name`. */
function example(name: string): string {
  const text = fs.readFileSync(README, 'utf8');
  const marker = `<!-- README example: ${name} `;
  const at = text.indexOf(marker);
  if (at < 0) throw new Error(`README.md has no block marked '${marker}'`);
  const open = text.indexOf('```ts\n', at);
  const close = text.indexOf('\n```', open + 6);
  if (open < 0 || close < 0 || text.slice(at, open).split('\n').length > 2) throw new Error(`the '${name}' marker is not right above a ts block`);
  return text.slice(open + 6, close + 1);
}

/** Checked lines: `await EXPR; // { ... } or undefined` becomes an assertion on EXPR's value. */
function withChecks(code: string): { code: string; checks: number } {
  let checks = 0;
  const out = code.split('\n').map((line) => {
    const m = /^await (.+?);\s*\/\/\s*(\{.*\})(?:\s+or\s+.*)?$/.exec(line);
    if (!m) return line;
    checks++;
    return `__expect(await ${m[1]}, ${JSON.stringify(m[1])}).toEqual(${m[2]});`;
  });
  return { code: out.join('\n'), checks };
}

async function runExample(code: string, masters: string): Promise<void> {
  const js = ts.transpileModule(code.replaceAll('127.0.0.1:7100', masters), { compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.None } }).outputText;
  const AsyncFunction = Object.getPrototypeOf(async () => undefined).constructor as new (...args: string[]) => (...a: unknown[]) => Promise<void>;
  await new AsyncFunction('TesseraClient', 'DbError', 'ErrorCode', '__expect', js)(TesseraClient, DbError, ErrorCode, expect);
}

beforeAll(async () => {
  cluster = await ProcCluster.create({ hostBase: 250, masters: 1, tservers: 3, tserverFlags: ['--heartbeat_interval_ms=200'] });
  await cluster.startAll();
}, 90_000);

afterAll(async () => {
  await cluster?.destroy();
});

describe('README examples', () => {
  it('README example "client": the table lifecycle runs as written, and its commented results are what the calls return', async () => {
    const { code, checks } = withChecks(example('client'));
    expect(checks, 'commented results checked').toBeGreaterThanOrEqual(2);
    await runExample(code, cluster!.masterAddresses.join(','));
    // It ends by dropping its table.
    const c = await TesseraClient.connect({ masterAddresses: cluster!.masterAddresses });
    try {
      expect((await c.listTables()).map((t) => t.name)).not.toContain('demo2');
    } finally {
      await c.close();
    }
  }, 120_000);

  it('README example "transaction": moves 10 from account 1 to account 2 as written', async () => {
    const c = await TesseraClient.connect({ masterAddresses: cluster!.masterAddresses });
    try {
      await c.createTable({ name: 'accounts', columns: [{ name: 'id', type: 'int64' }, { name: 'balance', type: 'int64' }], primaryKey: { hash: ['id'], range: [] }, numTablets: 2, replicationFactor: 3 });
      await c.table('accounts').insert({ id: 1n, balance: 100n });
      await runExample(example('transaction'), cluster!.masterAddresses.join(','));
      expect(await c.table('accounts').get({ id: 1n })).toEqual({ id: 1n, balance: 90n });
      expect(await c.table('accounts').get({ id: 2n })).toEqual({ id: 2n, balance: 10n });
    } finally {
      await c.close();
    }
  }, 120_000);
});
