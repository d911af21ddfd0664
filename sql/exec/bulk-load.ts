/**
 * A bulk load into a table emptied in the same block (docs/sql.md, "COPY"): PostgreSQL writes COPY
 * into a table created or truncated in the same transaction to a new file, so an abort just drops
 * it. tessera's COPY FROM writes outside the block's transaction (plain batch writes, no intents);
 * for a table this block created or truncated, the session remembers the load, and if the block
 * ends in anything but a successful COMMIT (ROLLBACK, a failed statement, a failed COMMIT, the
 * connection dropping) it truncates the table again, so the load leaves nothing behind.
 */
export class BulkLoads {
  /** Tables created or truncated in the current block (DDL runs at once, it is not undone). */
  private readonly emptied = new Set<string>();
  /** Of those, the ones a COPY FROM wrote to in the current block. */
  private readonly loaded = new Set<string>();

  /** CREATE TABLE or TRUNCATE of `name` inside a block. */
  emptiedInBlock(name: string): void {
    this.emptied.add(name);
  }

  /** DROP TABLE of `name`: nothing to undo there any more (a later table of that name is another). */
  dropped(name: string): void {
    this.emptied.delete(name);
    this.loaded.delete(name);
  }

  /** A COPY FROM into `name` inside a block is about to write (noted first: a failed COPY is undone too). */
  copyInto(name: string): void {
    if (this.emptied.has(name)) this.loaded.add(name);
  }

  /** The block committed: its loads stay. */
  committed(): void {
    this.emptied.clear();
    this.loaded.clear();
  }

  /**
   * The block ended without committing: empty every table loaded in it again. Answers a notice per
   * table that could not be emptied (the ROLLBACK itself still succeeds, as PostgreSQL's does).
   */
  async aborted(truncate: (name: string) => Promise<void>): Promise<string[]> {
    const names = [...this.loaded];
    this.committed();
    const notices: string[] = [];
    for (const n of names) {
      try {
        await truncate(n);
      } catch (e) {
        notices.push(`the rows COPY loaded into "${n}" in this block could not be removed: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    return notices;
  }
}
