/**
 * A replica's two databases (docs/architecture.md §DocDB): RegularDB under DIR/regular and IntentsDB
 * under DIR/intents, and the DocDb over them. A remote bootstrap replaces them; every part reaches
 * them through `docdb` at the time of use, never a copy kept from before.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { BackgroundWork, DocDbApi, KvEngine } from '../../docdb';
import type { DbName } from './tablet-types';

export interface TabletDbsDeps {
  dir: string;
  openEngine(dir: string): Promise<KvEngine>;
  openDocDb(regular: KvEngine, intents: KvEngine): Promise<DocDbApi>;
}

export class TabletDbs {
  regular: KvEngine | undefined;
  intents: KvEngine | undefined;
  private docdbValue: DocDbApi | undefined;

  constructor(private readonly deps: TabletDbsDeps) {}

  /** The DocDb (opened: every caller runs after open()). */
  get docdb(): DocDbApi {
    return this.docdbValue!;
  }

  isOpen(): boolean {
    return this.docdbValue !== undefined;
  }

  async open(): Promise<void> {
    await this.openEngines();
    this.docdbValue = await this.deps.openDocDb(this.regular!, this.intents!);
  }

  private async openEngines(): Promise<void> {
    this.regular = await this.deps.openEngine(path.join(this.deps.dir, 'regular'));
    this.intents = await this.deps.openEngine(path.join(this.deps.dir, 'intents'));
  }

  /** Remove both databases' files (closed, or never opened). */
  wipeDirs(): void {
    for (const d of ['regular', 'intents']) fs.rmSync(path.join(this.deps.dir, d), { recursive: true, force: true });
  }

  /**
   * Replace both databases with what `fetch` hands over (remote bootstrap): the old ones closed and
   * wiped, the new ones filled, flushed and opened as a DocDb.
   */
  async replace(fetch: (onChunk: (db: DbName, pairs: Array<[Uint8Array, Uint8Array]>) => Promise<void>) => Promise<void>): Promise<void> {
    await this.docdb.close();
    this.wipeDirs();
    await this.openEngines();
    const regular = this.regular!;
    const intents = this.intents!;
    await fetch(async (db, pairs) => {
      const eng = db === 'regular' ? regular : intents;
      await eng.write(
        pairs.map(([key, value]) => ({ type: 'put' as const, key, value })),
        { sync: false },
      );
    });
    await regular.flush();
    await intents.flush();
    this.docdbValue = await this.deps.openDocDb(regular, intents);
  }

  /** Close what is open (a failed start: the files can then be deleted and the tablet created afresh). */
  async close(): Promise<void> {
    if (this.docdbValue) await this.docdbValue.close().catch(() => undefined);
    else for (const e of [this.regular, this.intents]) if (e) await e.close().catch(() => undefined);
  }

  /** RocksDB's background work in each database since it opened (a database whose engine has none is left out). */
  backgroundWork(): { regulardb?: BackgroundWork; intentsdb?: BackgroundWork } {
    // An engine closing under a reopen (remote bootstrap) throws SHUTTING_DOWN: leave it out of this
    // read rather than fail the console page or metrics scrape that asked.
    const read = (e: KvEngine | undefined): BackgroundWork | undefined => {
      try {
        return e?.background?.();
      } catch {
        return undefined;
      }
    };
    const regulardb = read(this.regular);
    const intentsdb = read(this.intents);
    return { ...(regulardb ? { regulardb } : {}), ...(intentsdb ? { intentsdb } : {}) };
  }
}
