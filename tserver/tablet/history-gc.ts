/**
 * A replica's history GC (docs/architecture.md §DocDB): drop RegularDB's versions older than the
 * history cutoff (now minus timestamp_history_retention_interval_sec) that no read at or after it can
 * see, never what an active reader or an unapplied transaction still needs (DocDb.gc caps the
 * cutoff). Each replica does it on its own, as YugabyteDB's compactions do; the cutoff becomes the
 * history floor, below which reads fail SNAPSHOT_TOO_OLD.
 */
import type { Flags } from '../../common/flags';
import type { HybridTime } from '../../common/hybrid-time';
import type { DocDbApi } from '../../docdb';
import { HISTORY_GC_MIN_NEW_VERSIONS_PCT } from '../tserver-flags';
import { incrementalGc } from './incremental-gc';

/** A history GC pass put off for too few new versions runs at the next chance after this many (history_gc_min_new_versions_pct). */
const HISTORY_GC_FEW_NEW_SKIPS_MAX = 11;
/** Put-count samples a replica keeps for that decision (the oldest, at or before the last cutoff, always stays). */
const HISTORY_GC_PUT_SAMPLES_MAX = 4096;

export interface HistoryGcDeps {
  flags: Flags;
  db(): DocDbApi;
  now(): HybridTime;
  /** The replica serves (a pass stops between its rounds when it no longer does). */
  running(): boolean;
  schemaVersion(): number;
}

export interface HistoryGcResult {
  versionsScanned: number;
  versionsDropped: number;
  droppedColumnVersions: number;
  cutoffHt: HybridTime;
}

export class HistoryGc {
  /** Passes of this replica: runs, skips, versions scanned and dropped, the last pass. */
  readonly stats = { runs: 0, skipped: 0, skippedFewNew: 0, skippedNothingOld: 0, versionsScanned: 0, versionsDropped: 0, droppedColumnVersions: 0, lastCutoffHt: 0n, lastMs: 0, lastDropped: 0 };
  /** After the last pass: its cutoff, the versions it kept, passes skipped since for too few new versions. */
  private last: { cutoffHt: HybridTime; versionsKept: number; fewNewSkips: number } | undefined;
  /** RegularDB's put count at each chance, oldest first (from the newest one at or before the last cutoff). */
  private readonly putSamples: Array<{ atHt: HybridTime; puts: number }> = [];
  /** The pass running, if any (a remote bootstrap waits for it before replacing the databases). */
  private running: Promise<unknown> | undefined;
  /** The schema version the last pass ran under (-1: none yet). */
  private lastSchemaVersion = -1;

  constructor(private readonly deps: HistoryGcDeps) {}

  /** Until the pass running (if any) ended. */
  async settled(): Promise<void> {
    await this.running?.catch(() => undefined);
  }

  /**
   * One chance for a pass. Skipped (undefined) when nothing was written above the last cutoff and
   * the schema did not change — such a pass drops nothing new — or too few versions were.
   */
  async run(): Promise<HistoryGcResult | undefined> {
    if (!this.deps.running() || this.running) return undefined;
    const db = this.deps.db();
    const nowHt = this.deps.now();
    const schemaVersion = this.deps.schemaVersion();
    const cutoffHt = db.historyCutoff(nowHt);
    if (this.skip(db, nowHt, cutoffHt, schemaVersion)) return undefined;
    const t0 = performance.now();
    // In passes of a bounded number of rows, yielding between them (incremental-gc.ts).
    const run = incrementalGc(db, cutoffHt, () => this.deps.running());
    this.running = run;
    try {
      const r = await run;
      this.lastSchemaVersion = schemaVersion;
      this.last = { cutoffHt: r.cutoffHt, versionsKept: r.versionsScanned - r.versionsDropped, fewNewSkips: 0 };
      const g = this.stats;
      g.runs++;
      g.versionsScanned += r.versionsScanned;
      g.versionsDropped += r.versionsDropped;
      g.droppedColumnVersions += r.droppedColumnVersions;
      g.lastCutoffHt = r.cutoffHt;
      g.lastDropped = r.versionsDropped;
      g.lastMs = Math.round(performance.now() - t0);
      return r;
    } finally {
      this.running = undefined;
    }
  }

  /**
   * Whether this chance is skipped (counted in stats). Only a version written above the last pass's
   * cutoff can have made an older one collectable since: too few of them for the pass to be worth
   * reading the whole tablet, unless the pass was put off for long enough (TTL expiry needs no
   * writes). They are counted as RegularDB puts (a little more than the versions written) since the
   * newest sample taken at or before that cutoff; without such a sample (the first passes after a
   * start) the pass runs. A sample is taken at every chance, skipped or not.
   */
  private skip(db: DocDbApi, nowHt: HybridTime, cutoffHt: HybridTime, schemaVersion: number): boolean {
    const putsNow = db.writeCounts().regulardb.puts;
    const base = this.samplePuts(putsNow, nowHt);
    const newest = db.newestVersionHt();
    // A DROP COLUMN since the last pass leaves values to delete whatever their time.
    const sameSchema = schemaVersion === this.lastSchemaVersion;
    const noDroppedColumnSince = sameSchema || !db.mayHoldDroppedColumns();
    if (newest !== undefined && newest <= db.historyFloor() && sameSchema) {
      this.stats.skipped++;
      return true;
    }
    // Every version is newer than the cutoff (a tablet younger than the retention interval, or one
    // never written): a pass could drop nothing, yet would read the whole tablet.
    if (cutoffHt < db.oldestVersionBound() && noDroppedColumnSince) {
      this.stats.skipped++;
      this.stats.skippedNothingOld++;
      return true;
    }
    const last = this.last;
    if (!last || base !== 0 || !sameSchema || last.fewNewSkips >= HISTORY_GC_FEW_NEW_SKIPS_MAX) return false;
    // Of those, only versions at or below this pass's cutoff can have made an older one collectable
    // yet: count up to the first sample taken at or after the cutoff (a newer write is younger than
    // the retention). A version applied later than its time is counted late; a pass put off for it
    // only waits for a later chance.
    let upTo = putsNow;
    for (const x of this.putSamples) {
      if (x.atHt >= cutoffHt) {
        upTo = x.puts;
        break;
      }
    }
    const newPuts = upTo - this.putSamples[0]!.puts;
    if (newPuts * 100 >= this.deps.flags.get(HISTORY_GC_MIN_NEW_VERSIONS_PCT) * last.versionsKept) return false;
    last.fewNewSkips++;
    this.stats.skipped++;
    this.stats.skippedFewNew++;
    return true;
  }

  /** Take this chance's sample; answers 0 when the samples start at one taken at or before the last cutoff, else -1. */
  private samplePuts(putsNow: number, nowHt: HybridTime): number {
    const samples = this.putSamples;
    // The count starts again with databases opened anew (remote bootstrap): older samples mean nothing.
    if (samples.length > 0 && samples[samples.length - 1]!.puts > putsNow) samples.length = 0;
    samples.push({ atHt: nowHt, puts: putsNow });
    let base = -1;
    if (this.last) {
      // Keep the newest sample at or before the last cutoff and every later one.
      for (let i = 0; i < samples.length && samples[i]!.atHt <= this.last.cutoffHt; i++) base = i;
      if (base > 0) samples.splice(0, base);
      if (base > 0) base = 0;
    }
    if (samples.length > HISTORY_GC_PUT_SAMPLES_MAX) samples.splice(1, samples.length - HISTORY_GC_PUT_SAMPLES_MAX);
    return base;
  }
}
