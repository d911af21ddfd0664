/**
 * The pure cores of incremental exports (docs/backup.md): materializeRow (a row as of a time from the
 * row before the window and the window's cells, by the cell model's masking rules) and checkChain
 * (a chain starts with a full export; each increment starts exactly at the previous cut).
 */
import { describe, expect, it } from 'vitest';
import { EXPORT_FORMAT, type Manifest } from '../../client/backup/backup-format';
import { checkChain, type ChainLink } from '../../client/backup/chain';
import { decodeChangedRow, encodeChangedRow, materializeRow, type ChangedRow } from '../../client/backup/increment-lines';
import { ErrorCode } from '../../common/errors';

const KEY = ['id'];
const VALS = ['a', 'b'];
const row = (cells: ChangedRow['cells']): ChangedRow => ({ key: { id: 1n }, cells });

describe('backup increments: materializeRow', () => {
  it('backup: puts after the base overwrite its columns, untouched ones keep the base value', () => {
    const c = materializeRow({ id: 1n, a: 'x', b: 'y' }, row([{ column: 'a', ht: 10n, type: 'PUT', value: 'x2' }]), 100n, KEY, VALS);
    expect(c).toEqual({ type: 'upsert', row: { id: 1n, a: 'x2', b: 'y' } });
  });
  it('backup: a row delete in the window deletes a base row; a put after it brings the row back with only that column', () => {
    const del = row([{ column: '', ht: 10n, type: 'DELETE_ROW' }]);
    expect(materializeRow({ id: 1n, a: 'x', b: 'y' }, del, 100n, KEY, VALS)).toEqual({ type: 'delete' });
    expect(materializeRow(undefined, del, 100n, KEY, VALS)).toEqual({ type: 'none' });
    const back = row([{ column: '', ht: 10n, type: 'DELETE_ROW' }, { column: 'b', ht: 20n, type: 'PUT', value: 'z' }]);
    expect(materializeRow({ id: 1n, a: 'x', b: 'y' }, back, 100n, KEY, VALS)).toEqual({ type: 'upsert', row: { id: 1n, a: null, b: 'z' } });
  });
  it('backup: the restore point cuts the window: cells above it do not count', () => {
    const r = row([{ column: 'a', ht: 10n, type: 'PUT', value: 'one' }, { column: 'a', ht: 20n, type: 'PUT', value: 'two' }, { column: '', ht: 30n, type: 'DELETE_ROW' }]);
    expect(materializeRow(undefined, r, 5n, KEY, VALS)).toEqual({ type: 'none' });
    expect(materializeRow(undefined, r, 15n, KEY, VALS)).toEqual({ type: 'upsert', row: { id: 1n, a: 'one', b: null } });
    expect(materializeRow(undefined, r, 25n, KEY, VALS)).toEqual({ type: 'upsert', row: { id: 1n, a: 'two', b: null } });
    expect(materializeRow({ id: 1n, a: 'base', b: null }, r, 30n, KEY, VALS)).toEqual({ type: 'delete' });
  });
  it('backup: a marker masks a put at an equal timestamp; a version delete takes out one put; a column delete nulls the column', () => {
    const eq = row([{ column: '', ht: 10n, type: 'DELETE_ROW' }, { column: 'a', ht: 10n, type: 'PUT', value: 'masked' }]);
    expect(materializeRow({ id: 1n, a: 'x', b: 'y' }, eq, 100n, KEY, VALS)).toEqual({ type: 'delete' });
    const ver = row([{ column: 'a', ht: 10n, type: 'PUT', value: 'old' }, { column: 'a', ht: 20n, type: 'PUT', value: 'gone' }, { column: 'a', ht: 20n, type: 'DELETE_VERSION' }]);
    expect(materializeRow(undefined, ver, 100n, KEY, VALS)).toEqual({ type: 'upsert', row: { id: 1n, a: 'old', b: null } });
    const col = row([{ column: 'b', ht: 10n, type: 'DELETE_COLUMN' }]);
    expect(materializeRow({ id: 1n, a: 'x', b: 'y' }, col, 100n, KEY, VALS)).toEqual({ type: 'upsert', row: { id: 1n, a: 'x', b: null } });
  });
  it('backup: a changed row survives its line (int64, bytes, NaN, row markers) and a bad line is CORRUPTION', () => {
    const line = encodeChangedRow({ key: { id: -(2n ** 63n) }, cells: [{ column: 'a', family: 'default', timestamp: 7n, type: 'PUT', value: new Uint8Array([0, 255]) }, { column: 'b', family: 'default', timestamp: 8n, type: 'PUT', value: Number.NaN }, { column: '', family: '', timestamp: 9n, type: 'DELETE_ROW' }] });
    const back = decodeChangedRow(line, 'x');
    expect(back.key).toEqual({ id: -(2n ** 63n) });
    expect(back.cells.map((c) => [c.column, c.ht, c.type])).toEqual([['a', 7n, 'PUT'], ['b', 8n, 'PUT'], ['', 9n, 'DELETE_ROW']]);
    expect(Buffer.from(back.cells[0]!.value as Uint8Array).toString('hex')).toBe('00ff');
    expect(Number.isNaN(back.cells[1]!.value)).toBe(true);
    expect(() => decodeChangedRow('{"k":{},"c":[["a","x","P"]]}', 'f line 1')).toThrow(expect.objectContaining({ code: ErrorCode.CORRUPTION }));
  });
});

function link(dir: string, kind: 'full' | 'incremental', cut: bigint, since?: bigint, columns = [{ name: 'id', type: 'int64' as const }]): ChainLink {
  const m: Manifest = { format: EXPORT_FORMAT, version: 2, kind, cutHt: String(cut), ...(since !== undefined ? { sinceHt: String(since) } : {}), cutTime: '', tables: [{ name: 't', columns, primaryKey: { hash: ['id'], range: [] }, numTablets: 1, rows: 0, digest: '', parts: [] }] };
  return { dir, m };
}

describe('backup increments: checkChain', () => {
  const full = link('full', 'full', 100n);
  const inc1 = link('inc1', 'incremental', 200n, 100n);
  const inc2 = link('inc2', 'incremental', 300n, 200n);
  it('backup: a chain full + two increments restores to the last cut by default, or any point inside it', () => {
    const p = checkChain([full, inc1, inc2], ['t']);
    expect(p.targetHt).toBe(300n);
    expect(p.increments.map((l) => [l.dir, l.uptoHt])).toEqual([['inc1', 200n], ['inc2', 300n]]);
    expect(p.verifyWith?.dir).toBe('inc2');
    const mid = checkChain([full, inc1, inc2], ['t'], 150n);
    expect(mid.increments.map((l) => [l.dir, l.uptoHt])).toEqual([['inc1', 150n]]);
    expect(mid.verifyWith).toBeUndefined();
    expect(checkChain([full, inc1, inc2], ['t'], 100n).increments).toEqual([]);
  });
  it('backup: a gap, an overlap, a chain without its full export, a point outside and a changed schema are refused', () => {
    const gap = link('gap', 'incremental', 300n, 250n);
    const overlap = link('over', 'incremental', 300n, 150n);
    expect(() => checkChain([full, inc1, gap], ['t'])).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT, details: expect.objectContaining({ part: 'CHAIN_GAP' }) }));
    expect(() => checkChain([full, inc1, overlap], ['t'])).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT, details: expect.objectContaining({ part: 'CHAIN_OVERLAP' }) }));
    expect(() => checkChain([inc1, inc2], ['t'])).toThrow(expect.objectContaining({ details: expect.objectContaining({ part: 'CHAIN_ORDER' }) }));
    expect(() => checkChain([full, inc1], ['t'], 250n)).toThrow(expect.objectContaining({ details: expect.objectContaining({ part: 'AS_OF' }) }));
    const altered = link('alt', 'incremental', 200n, 100n, [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' as never }]);
    expect(() => checkChain([full, altered], ['t'])).toThrow(expect.objectContaining({ code: ErrorCode.NOT_SUPPORTED }));
  });
});
