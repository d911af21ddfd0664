/**
 * Several single-tablet fast-path commits in ONE Raft entry (docs/transactions.md "Single-tablet
 * fast path"): the commits a client coalesced into one Write RPC (`more`), each a whole transaction
 * and a retryable request of its own. Without this, each became a WRITE entry of its own (3 entries
 * applied per 2-row transaction on an RF 3 tablet, against ~1.8 per coalesced plain put).
 *
 * The leader takes the latches of every commit's rows at once, checks each commit on its own under
 * them exactly as its lone write would (opsToWrite: fast-path conflicts, other transactions'
 * intents, existence checks; a commit that fails is answered alone and left out), picks ONE hybrid
 * time above every check (mvcc.nextHt after all of them, as the lone write does after its own), and
 * proposes one WRITE entry carrying every remaining commit's ops and request ids (`moreRequests`):
 * each request is recorded as replicated when the entry commits/applies, so a resent copy of any
 * of them is answered, not applied again. A commit whose rows another commit of the batch writes, a
 * copy of a request running or replicated here, or one that holds or waits for row locks takes the
 * lone write path. Each transaction still commits or fails by itself: the entry only shares the Raft
 * round, the log record and the apply batch. Runtime flag txn_fast_path_one_entry (A/B).
 */
import type { HybridTime } from '../../common/hybrid-time';
import type { DocKey, RowOp } from '../../docdb';
import { docKeyString, encodeTabletOp, type RequestTag } from './tablet-op';
import { releaseWhenSettled, type WriteRequest } from './tablet-types';
import type { SharedEntryDeps } from './combined-writes';

/** opsToWrite here: the commit's checks and its ops (the lone write's); writeAlone: one entry for this commit. */
export interface FastPathBatchDeps extends SharedEntryDeps {
  /** Answer at Raft commit (as a lone write does), else once applied here. */
  answerAtCommit(): boolean;
  propose(data: Uint8Array, onCommitted?: () => void): Promise<unknown>;
}

interface Commit {
  req: WriteRequest;
  request: RequestTag;
  keys: DocKey[];
  rowKeys: string[];
  ops?: RowOp[];
  /** The request's outcome for copies of it (the entry's fate, or the failure before it). */
  settle: { resolve(ht: HybridTime): void; reject(e: unknown): void };
  /** The caller's answer. */
  answer: { resolve(ht: HybridTime): void; reject(e: unknown): void };
  done: boolean;
}

function canShare(req: WriteRequest): boolean {
  return req.fastPathTxn !== undefined && req.request !== undefined && req.computed === undefined && req.waitForLocks !== true && req.heldLocks === undefined && req.unlockAfter === undefined;
}

function settled<T>(): { promise: Promise<T>; resolve(v: T): void; reject(e: unknown): void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

/** Run `reqs` (fast-path commits to one tablet), sharing one entry where they can; one answer each, in order. */
export function writeFastPathBatch(d: FastPathBatchDeps, reqs: readonly WriteRequest[]): Array<Promise<HybridTime>> {
  const out: Array<Promise<HybridTime>> = [];
  const commits: Commit[] = [];
  const taken = new Set<string>();
  for (const req of reqs) {
    const keys = req.ops.map((o) => o.op.key);
    const rowKeys = keys.map((k) => docKeyString(k));
    let fresh = false;
    try {
      fresh = canShare(req) && !rowKeys.some((k) => taken.has(k)) && d.retryable.check(req.request!, d.tabletId).kind === 'new';
    } catch {
      fresh = false; // not serving, or a late copy: the lone path answers it
    }
    if (!fresh) {
      out.push(d.writeAlone(req));
      continue;
    }
    for (const k of rowKeys) taken.add(k);
    const outcome = settled<HybridTime>();
    const answer = settled<HybridTime>();
    d.retryable.start(req.request!, outcome.promise);
    commits.push({ req, request: req.request!, keys, rowKeys, settle: outcome, answer, done: false });
    out.push(answer.promise);
  }
  if (commits.length > 0) {
    runCommits(d, commits).catch((e: unknown) => {
      for (const c of commits) fail(c, d.withLeaderHint(e));
    });
  }
  return out;
}

function fail(c: Commit, e: unknown): void {
  if (c.done) return;
  c.done = true;
  c.settle.reject(e);
  c.answer.reject(e);
}

async function runCommits(d: FastPathBatchDeps, commits: Commit[]): Promise<void> {
  d.checkServing();
  const release = await d.locks.acquire(commits.flatMap((c) => c.rowKeys));
  let unsettled: Promise<unknown> | undefined;
  try {
    // Each commit checked on its own (a conflict fails only that transaction), all under the latches.
    await Promise.all(
      commits.map(async (c) => {
        try {
          const ops = await d.opsToWrite(c.req, c.keys);
          if (ops) c.ops = ops;
          else {
            c.done = true;
            c.settle.resolve(0n);
            c.answer.resolve(0n);
          }
        } catch (e) {
          fail(c, d.withLeaderHint(e));
        }
      }),
    );
    d.checkServing();
    // Above every check's clock movement (orderAfterIntents, serializable ordering), as for a lone write.
    const ht = d.mvcc.nextHt();
    for (const c of commits) {
      if (c.done) continue;
      try {
        d.rowLocks.check(d.tabletId, c.keys, undefined, ht);
      } catch (e) {
        fail(c, e);
      }
    }
    const live = commits.filter((c) => !c.done);
    if (live.length === 0) return;
    const { proposal, answerable } = proposeCommits(d, live, ht);
    unsettled = proposal;
    await answerCommits(d, live, answerable, ht);
  } finally {
    releaseWhenSettled(release, unsettled);
  }
}

/** One WRITE entry for every live commit: the first one's request leads, the others ride along. */
function proposeCommits(d: FastPathBatchDeps, live: Commit[], ht: HybridTime): { proposal: Promise<unknown>; answerable: Promise<unknown> } {
  d.mvcc.addInflight(ht);
  const [first, ...rest] = live;
  const data = encodeTabletOp({ type: 'WRITE', ht, ops: live.flatMap((c) => c.ops ?? []), request: first!.request, ...(rest.length > 0 ? { moreRequests: rest.map((c) => c.request) } : {}) });
  let answerable: Promise<unknown>;
  let proposal: Promise<unknown>;
  if (d.answerAtCommit()) {
    let committed!: () => void;
    const atCommit = new Promise<void>((resolve) => (committed = resolve));
    proposal = d.propose(data, () => {
      // As the lone write (write-path.ts proposeWrite): leader reads wait for the apply, and copies
      // of every request of the entry are answered from now on.
      d.mvcc.markAcked(ht);
      for (const c of live) d.retryable.replicated(c.request, ht);
      committed();
    });
    answerable = Promise.race([atCommit, proposal]);
  } else {
    proposal = d.propose(data);
    answerable = proposal;
  }
  proposal.catch(() => d.mvcc.markApplied(ht));
  for (const c of live) {
    c.done = true;
    proposal.then(
      () => c.settle.resolve(ht),
      (e: unknown) => c.settle.reject(d.withLeaderHint(e)),
    );
  }
  return { proposal, answerable };
}

/** Each caller's answer: the hybrid time once answerable, or TIMED_OUT after its own timeout. */
async function answerCommits(d: FastPathBatchDeps, live: Commit[], answerable: Promise<unknown>, ht: HybridTime): Promise<void> {
  await Promise.all(
    live.map(async (c) => {
      try {
        await d.settledWithin(answerable, d.timeoutMs(c.req), 'write');
        c.answer.resolve(ht);
      } catch (e) {
        c.answer.reject(d.withLeaderHint(e));
      }
    }),
  );
  d.metrics.writeOps += live.length;
  d.metrics.rowsWritten += live.reduce((n, c) => n + c.keys.length, 0);
}
