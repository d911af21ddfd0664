/**
 * SAVEPOINT / ROLLBACK TO SAVEPOINT / RELEASE SAVEPOINT inside a transaction block (docs/sql.md,
 * "Savepoints"). tessera's transactions have no subtransactions in their intents (YugabyteDB tags
 * intents with a subtransaction id); the SQL layer undoes instead: while a savepoint is set, every
 * row a statement is about to write is first read inside the transaction (its before-image, once per
 * row and savepoint level), and ROLLBACK TO writes those images back, newest level first, in the same
 * transaction — a row that did not exist is deleted again. What other transactions see is unchanged
 * (nothing of the block is visible before COMMIT); the rows stay locked by the transaction until it
 * ends, where PostgreSQL would release the locks of the rolled-back subtransaction.
 */
import type { Row, Table } from '../../client';
import { SqlError, SqlState } from './sql-error';

interface Image {
  table: string;
  key: Row;
  before: Row | undefined;
}

interface Level {
  name: string;
  /** By table and key: the row as it was when the level began (a promise while it is read). */
  images: Map<string, Promise<Image>>;
}

export interface SavepointDeps {
  /** The key columns and all columns of a table. */
  columnsOf(table: string): Promise<{ key: string[]; all: string[] }>;
}

const WRITES = new Set(['insert', 'upsert', 'update', 'delete', 'upsertMany', 'deleteMany']);

function keyText(table: string, key: Row): string {
  return `${table}\u0000${JSON.stringify(Object.entries(key).map(([c, v]) => [c, v instanceof Uint8Array ? `x${Buffer.from(v).toString('hex')}` : typeof v === 'bigint' ? `n${v}` : v]))}`;
}

export class Savepoints {
  private levels: Level[] = [];
  private readonly inflight = new Set<Promise<unknown>>();

  constructor(private readonly deps: SavepointDeps) {}

  get active(): boolean {
    return this.levels.length > 0;
  }

  /** SAVEPOINT name (a name may repeat: the newest one is the one named later, as in PostgreSQL). */
  define(name: string): void {
    this.levels.push({ name, images: new Map() });
  }

  private find(name: string, verb: string): number {
    for (let i = this.levels.length - 1; i >= 0; i--) if (this.levels[i]!.name === name) return i;
    throw new SqlError(SqlState.INVALID_SAVEPOINT, `savepoint "${name}" does not exist`, { hint: `${verb} names a savepoint set earlier in this transaction block` });
  }

  /** RELEASE SAVEPOINT name: it and the ones after it are gone; their undo images join the level below. */
  release(name: string): void {
    const i = this.find(name, 'RELEASE SAVEPOINT');
    const gone = this.levels.splice(i);
    const below = this.levels[i - 1];
    if (!below) return;
    // The level below keeps its own (older) image of a row; rows first written after it was set take the released one's.
    for (const l of gone) for (const [k, img] of l.images) if (!below.images.has(k)) below.images.set(k, img);
  }

  /** ROLLBACK TO SAVEPOINT name: every row written since is put back as it was; the savepoint stays. */
  async rollbackTo(name: string, tableOf: (name: string) => Table): Promise<void> {
    const i = this.find(name, 'ROLLBACK TO SAVEPOINT');
    // Writes of a statement that failed may still be in flight: each must land before its undo does.
    await Promise.allSettled([...this.inflight]);
    const undone = this.levels.splice(i + 1);
    const level = this.levels[i]!;
    for (const l of [...undone.reverse(), level]) {
      const images = await Promise.all([...l.images.values()]);
      await Promise.all(images.map((img) => this.restore(img, tableOf(img.table))));
    }
    level.images = new Map();
  }

  private async restore(img: Image, t: Table): Promise<void> {
    if (!img.before) {
      await t.delete(img.key);
      return;
    }
    const { all } = await this.deps.columnsOf(img.table);
    // Every column named: a cell the row did not have is set to NULL (removed) again.
    await t.upsert(Object.fromEntries(all.map((c) => [c, img.before![c] ?? null])));
  }

  clear(): void {
    this.levels = [];
  }

  /** `t` whose writes first record the before-image of each row they touch (reads pass through). */
  wrap(t: Table): Table {
    return new Proxy(t, {
      get: (target, prop, receiver) => {
        const v = Reflect.get(target, prop, receiver) as unknown;
        if (typeof prop !== 'string' || !WRITES.has(prop) || typeof v !== 'function') return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        return (...args: unknown[]) => {
          const rows = prop === 'upsertMany' || prop === 'deleteMany' ? (args[0] as Row[]) : [args[0] as Row];
          const p = this.capture(target, rows).then(() => (v as (...a: unknown[]) => Promise<unknown>).apply(target, args));
          this.inflight.add(p);
          void p.then(() => this.inflight.delete(p), () => this.inflight.delete(p));
          return p;
        };
      },
    });
  }

  private async capture(t: Table, rows: readonly Row[]): Promise<void> {
    const top = this.levels[this.levels.length - 1];
    if (!top) return;
    const { key: cols } = await this.deps.columnsOf(t.name);
    await Promise.all(rows.map((r) => {
      const key: Row = Object.fromEntries(cols.map((c) => [c, r[c] ?? null]));
      const k = keyText(t.name, key);
      let img = top.images.get(k);
      if (!img) {
        img = t.get(key).then((before) => ({ table: t.name, key, before }));
        top.images.set(k, img);
      }
      return img;
    }));
  }
}
