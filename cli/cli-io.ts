/** Output helpers shared by the commands: aligned tables for people, JSON (--json) for scripts. */
import { formatTable } from '../lab/text-table';
import { toJson } from '../rpc/json';
import { TesseraClient } from '../client/tessera-client';

export const DEFAULT_MASTER_ADDRESSES = process.env['TESSERA_MASTER_ADDRESSES'] ?? '127.0.0.1:7100';

export function print(line: string): void {
  process.stdout.write(line + '\n');
}

export function printJson(v: unknown): void {
  print(toJson(v, 2));
}

export function cellText(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (v instanceof Uint8Array) return '0x' + Buffer.from(v).toString('hex');
  return String(v);
}

export function printTable(headers: string[], rows: unknown[][]): void {
  print(formatTable(headers, rows.map((r) => r.map(cellText))));
}

export async function withClient<T>(masterAddresses: string, timeoutMs: number | undefined, f: (c: TesseraClient) => Promise<T>): Promise<T> {
  const client = await TesseraClient.connect({ masterAddresses: masterAddresses.split(','), ...(timeoutMs ? { timeoutMs } : {}) });
  try {
    return await f(client);
  } finally {
    await client.close();
  }
}
