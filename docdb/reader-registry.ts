/**
 * Active readers' read times. GC never collects a version a registered reader may still need: the
 * effective history cutoff is min(requested cutoff, oldest registered read time).
 */
import type { HybridTime } from '../common/hybrid-time';

export class ReaderRegistry {
  /** readHt → number of readers at that time. Readers are few (one per in-flight read). */
  private readonly readers = new Map<HybridTime, number>();

  register(readHt: HybridTime): () => void {
    this.readers.set(readHt, (this.readers.get(readHt) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const c = (this.readers.get(readHt) ?? 1) - 1;
      if (c <= 0) this.readers.delete(readHt);
      else this.readers.set(readHt, c);
    };
  }

  oldest(): HybridTime | undefined {
    let m: HybridTime | undefined;
    for (const t of this.readers.keys()) if (m === undefined || t < m) m = t;
    return m;
  }

  /** The cutoff GC may use given the requested one. */
  cap(cutoff: HybridTime): HybridTime {
    const o = this.oldest();
    return o !== undefined && o < cutoff ? o : cutoff;
  }
}
