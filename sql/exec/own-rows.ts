/**
 * Rows a transaction block already knows as its own reads would see them (docs/sql.md,
 * "Transactions"). Inside BEGIN … COMMIT every read of the block's transaction uses one read time
 * (snapshot isolation) and sees the transaction's own writes; so once the block has read a row whole
 * by its key, the row as the block sees it is that image with the block's later writes to it laid
 * over — exactly what the tablet would answer. pgbench -N's `SELECT abalance … WHERE aid = :aid`
 * right after its `UPDATE … WHERE aid = :aid` is answered here, without a Read RPC and without
 * sending the UPDATE's kept-back write first (the writes then leave together at COMMIT).
 *
 * Serializable blocks too: a cached image comes from a read of the block (its read lock is held to
 * the end) or an insert that was sent (its intent is held), so no other transaction can commit a
 * change to the row before this one ends.
 *
 * What keeps an image current: writes through the wrapped table update it (an upsert merges its
 * columns, a delete marks the row absent, an insert sets the whole row once it succeeded); any other
 * kind of write drops the table's images; a read in flight while a write to its table starts is not
 * kept (a generation count). The session drops everything at COMMIT, ROLLBACK, ROLLBACK TO
 * SAVEPOINT (its undo writes bypass this table) and any statement other than SELECT / INSERT /
 * UPDATE / DELETE (DDL, COPY). Only whole-row reads (no column projection) fill it; a projected read
 * is answered from a whole image. Bounded: OWN_ROWS_MAX images per block, later reads go through.
 */
import type { Row, Table } from '../../client';

/** Row images one transaction block keeps at most. */
export const OWN_ROWS_MAX = 10_000;

/** Table methods that only read: passed through untouched (a get may be answered from an image). */
const READS = new Set(['get', 'scan', 'scanRows', 'scanRowPages', 'scanLinePages', 'aggregate', 'getCells', 'scanCells', 'scanCellPages', 'rowCallStats']);

interface TableImages {
  /** Learned from the first whole-row get (a get names exactly the key columns). */
  keyCols: string[] | undefined;
  /** By key text: the row, or null when the block knows it is absent. */
  rows: Map<string, Row | null>;
  /** Bumped by every write: a get that began before it does not keep its answer. */
  gen: number;
}

function valueText(v: unknown): string {
  if (v instanceof Uint8Array) return `x${Buffer.from(v).toString('hex')}`;
  if (typeof v === 'bigint') return `n${v}`;
  return JSON.stringify(v ?? null);
}

/** The key's text, whatever the order of its properties. */
function keyText(key: Row, cols: readonly string[]): string {
  let s = '';
  for (const c of cols) s += `${c}\u0000${valueText(key[c])}\u0001`;
  return s;
}

export class OwnRows {
  private readonly tables = new Map<string, TableImages>();
  private size = 0;
  /** Gets answered from an image (tests, EXPLAIN-free diagnostics). */
  hits = 0;

  clear(): void {
    // Handles already given out keep their state object: empty it, do not replace it.
    for (const s of this.tables.values()) {
      s.rows.clear();
      s.gen++;
    }
    this.size = 0;
  }

  private state(name: string): TableImages {
    let s = this.tables.get(name);
    if (!s) {
      s = { keyCols: undefined, rows: new Map(), gen: 0 };
      this.tables.set(name, s);
    }
    return s;
  }

  private set(s: TableImages, k: string, row: Row | null): void {
    if (!s.rows.has(k)) {
      if (this.size >= OWN_ROWS_MAX) return;
      this.size++;
    }
    s.rows.set(k, row);
  }

  private dropTable(s: TableImages): void {
    this.size -= s.rows.size;
    s.rows.clear();
    s.gen++;
  }

  /** `t` (a table of the block's transaction) whose gets may be answered from images and whose writes keep them current. */
  wrap(t: Table): Table {
    const s = this.state(t.name);
    return new Proxy(t, {
      get: (target, prop, receiver) => {
        const v = Reflect.get(target, prop, receiver) as unknown;
        if (typeof v !== 'function') return v;
        const f = v as (...a: unknown[]) => unknown;
        if (prop === 'get') return (key: Row, o?: { columns?: string[] }) => this.read(s, target, key, o);
        if (typeof prop === 'string' && READS.has(prop)) return f.bind(target);
        if (prop === 'upsert' || prop === 'delete') return (row: Row, ...rest: unknown[]) => {
          this.overlay(s, [row], prop);
          return f.call(target, row, ...rest);
        };
        if (prop === 'upsertMany' || prop === 'deleteMany') return (rows: Row[], ...rest: unknown[]) => {
          this.overlay(s, rows, prop === 'upsertMany' ? 'upsert' : 'delete');
          return f.call(target, rows, ...rest);
        };
        if (prop === 'insert') return async (row: Row, ...rest: unknown[]) => {
          s.gen++;
          await f.call(target, row, ...rest);
          s.gen++;
          if (s.keyCols) this.set(s, keyText(row, s.keyCols), { ...row });
        };
        // Any other write (update, cells, row operations): this table's images are no longer known.
        return (...args: unknown[]) => {
          this.dropTable(s);
          return f.apply(target, args);
        };
      },
    });
  }

  private async read(s: TableImages, t: Table, key: Row, o?: { columns?: string[] }): Promise<Row | undefined> {
    if (s.keyCols) {
      const known = s.rows.get(keyText(key, s.keyCols));
      if (known !== undefined) {
        this.hits++;
        return known === null ? undefined : { ...known };
      }
    }
    const gen = s.gen;
    const r = await t.get(key, o as Parameters<Table['get']>[1]);
    if (!o?.columns && gen === s.gen) {
      s.keyCols ??= Object.keys(key);
      this.set(s, keyText(key, s.keyCols), r ? { ...r } : null);
    }
    return r;
  }

  /** Before a write is handed on: lay it over the images it touches (a read in flight is not kept). */
  private overlay(s: TableImages, rows: readonly Row[], kind: 'upsert' | 'delete'): void {
    s.gen++;
    const cols = s.keyCols;
    if (!cols) return;
    for (const row of rows) {
      const k = keyText(row, cols);
      if (kind === 'delete') this.set(s, k, null);
      else if (s.rows.has(k)) {
        const old = s.rows.get(k);
        // Upsert of an absent row makes a row of the given columns (others NULL); else it changes them.
        s.rows.set(k, { ...(old ?? {}), ...row });
      }
    }
  }
}
