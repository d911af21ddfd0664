/**
 * row-locks: why HBase removed its row locks, and what leases and fencing tokens change
 * (docs/rows.md). Four clients lock a row each and stall without unlocking. Meanwhile:
 *  - writers of those rows either fail at once with ROW_LOCKED or, asked to wait, wait — holding no
 *    lock and no thread (at most ROW_LOCK_WAITERS_MAX per tablet, never past their deadline);
 *  - writers of other rows carry on: one event loop, nothing blocked;
 *  - the leases run out by themselves (hybrid time, no unlock entry) and the waiting writers go on.
 * Then a lock holder pauses past its lease; another client locks the row (a higher fencing token) and
 * writes; the paused holder's late write is refused FENCED and never lands.
 * The chart: writes per 250 ms of each kind over time.
 */
import { DbError, ErrorCode } from '../../common/errors';
import { ROW_LOCK_WAITERS_MAX } from '../../tserver/tablet/row-locks';
import type { ChartSeries } from './report';
import type { Check, ExperimentOptions, ExperimentResult } from './experiment';
import { EXPERIMENT_TABLE, openExperimentLab } from './experiment-lab';

const HOLDERS = 4;
const LEASE_MS = 3_000;
const FREE_WRITERS = 8;
const FAIL_FAST_WRITERS = 4;
const WAITING_WRITERS = 4;
/** How long the writers run: past the leases' end, so the waiting writers finish inside it. */
const LOAD_MS = LEASE_MS + 2_000;
const WRITES_PER_WRITER_MAX = 5_000;
const BUCKET_MS = 250;
const PAUSED_ROW = 50n;

type Kind = 'free row ok' | 'locked row ROW_LOCKED' | 'locked row ok (not waiting)' | 'locked row ok (after waiting)';
const KINDS: readonly Kind[] = ['free row ok', 'locked row ROW_LOCKED', 'locked row ok (not waiting)', 'locked row ok (after waiting)'];

export async function rowLocks(o: ExperimentOptions): Promise<ExperimentResult> {
  const lab = await openExperimentLab(o, 'row-locks');
  const checks: Check[] = [];
  const figures: Record<string, number | string> = {};
  try {
    const t = lab.client.table(EXPERIMENT_TABLE);
    const locks = await Promise.all(Array.from({ length: HOLDERS }, (_, i) => t.lockRow({ id: BigInt(i + 1) }, { leaseMs: LEASE_MS, holder: `stalled-holder-${i + 1}` })));
    const lockedAt = lab.now();
    lab.log(`${HOLDERS} clients locked rows 1..${HOLDERS} (lease ${LEASE_MS} ms, tokens ${locks.map((l) => l.token).join(', ')}) and stall without unlocking`);
    const events: Array<{ kind: Kind; at: number }> = [];
    const other: Record<string, number> = {};
    const note = (kind: Kind): void => void events.push({ kind, at: lab.now() });
    const end = performance.now() + LOAD_MS;
    const loop = async (f: (i: number) => Promise<void>): Promise<void> => {
      for (let i = 0; i < WRITES_PER_WRITER_MAX && performance.now() < end; i++) {
        try {
          await f(i);
        } catch (e) {
          const code = e instanceof DbError ? e.code : 'ERROR';
          if (code === ErrorCode.ROW_LOCKED) note('locked row ROW_LOCKED');
          else other[code] = (other[code] ?? 0) + 1;
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    };
    let waitedOk = 0;
    await Promise.all([
      ...Array.from({ length: FREE_WRITERS }, (_, w) => loop(async (i) => {
        await t.mutateRow({ id: BigInt(1000 + w * 100 + (i % 100)) }, { put: { v: `w${w}.${i}` } });
        note('free row ok');
      })),
      ...Array.from({ length: FAIL_FAST_WRITERS }, (_, w) => loop(async () => {
        await t.append({ id: BigInt((w % HOLDERS) + 1) }, { v: 'f' });
        note('locked row ok (not waiting)');
      })),
      ...Array.from({ length: WAITING_WRITERS }, (_, w) => (async () => {
        await t.append({ id: BigInt((w % HOLDERS) + 1) }, { v: `wait${w},` }, { waitForLocks: true, timeoutMs: LEASE_MS + 5_000 });
        waitedOk++;
        note('locked row ok (after waiting)');
      })().catch((e: unknown) => void (other[`waiter ${DbError.from(e).code}`] = (other[`waiter ${DbError.from(e).code}`] ?? 0) + 1))),
    ]);
    const count = (k: Kind, before = Infinity): number => events.filter((e) => e.kind === k && e.at < before).length;
    const leaseEnd = lockedAt + LEASE_MS;
    lab.log(`load done: free-row writes ${count('free row ok')} (${count('free row ok', leaseEnd)} while the locks were held), ROW_LOCKED ${count('locked row ROW_LOCKED')}, waiting writers done ${waitedOk}/${WAITING_WRITERS}; other errors ${JSON.stringify(other)}`);
    const rows = await Promise.all(locks.map((_, i) => t.get({ id: BigInt(i + 1) })));
    checks.push({ name: 'writers of other rows carried on while the locks were held', ok: count('free row ok', leaseEnd) > 0, detail: `${count('free row ok', leaseEnd)} free-row writes before the leases ended` });
    checks.push({ name: 'writers of a locked row that do not wait were refused ROW_LOCKED while it was held, and wrote once the leases ran out', ok: count('locked row ROW_LOCKED') > 0 && count('locked row ok (not waiting)') > 0, detail: `${count('locked row ROW_LOCKED')} ROW_LOCKED answers, then ${count('locked row ok (not waiting)')} writes` });
    checks.push({ name: 'the leases ran out by themselves (no unlock) and every waiting writer then wrote its row', ok: waitedOk === WAITING_WRITERS && Array.from({ length: WAITING_WRITERS }, (_, w) => w).every((w) => String(rows[w % HOLDERS]?.['v'] ?? '').includes(`wait${w},`)), detail: `rows 1..${HOLDERS}: ${rows.map((r) => JSON.stringify(r?.['v'] ?? null).slice(0, 60)).join(' ')}` });
    figures['freeRowWritesWhileLocked'] = count('free row ok', leaseEnd);
    figures['rowLockedRefusals'] = count('locked row ROW_LOCKED');
    figures['waitingWriters'] = WAITING_WRITERS;
    figures['waitersBoundPerTablet'] = ROW_LOCK_WAITERS_MAX;
    await pausedHolder(lab, t, checks, figures);
    const series: ChartSeries[] = KINDS.map((k) => ({ name: `${k} per ${BUCKET_MS} ms`, points: buckets(events.filter((e) => e.kind === k).map((e) => e.at), lockedAt, lockedAt + LOAD_MS + 1_000) }));
    return {
      name: 'row-locks',
      title: 'Row locks with leases and fencing tokens: stalled holders, waiting writers, a paused holder fenced',
      summary: `A 3-node ${lab.driver.kind} lab (RF 3, 3 tablets). ${HOLDERS} clients lock a row each with a ${LEASE_MS} ms lease and stall; for ${LOAD_MS / 1000} s ${FREE_WRITERS} writers write other rows, ${FAIL_FAST_WRITERS} write the locked rows without waiting and ${WAITING_WRITERS} wait for them. Then a holder pauses past its lease while another client takes the row.`,
      checks,
      figures,
      chart: { title: `Writes per ${BUCKET_MS} ms (x: ms after the locks were taken; the leases end at ${LEASE_MS} ms)`, series, yLabel: 'writes' },
      timeline: lab.timeline,
    };
  } finally {
    await lab.close();
  }
}

/** A holder pauses past its lease; another takes the row; the holder's late write is FENCED. */
async function pausedHolder(lab: Awaited<ReturnType<typeof openExperimentLab>>, t: ReturnType<typeof lab.client.table>, checks: Check[], figures: Record<string, number | string>): Promise<void> {
  const key = { id: PAUSED_ROW };
  const a = await t.lockRow(key, { leaseMs: 1_000, holder: 'A' });
  await t.append(key, { v: 'A1,' }, { lock: a });
  lab.log(`holder A locked row ${PAUSED_ROW} (token ${a.token}), wrote A1, and pauses past its 1000 ms lease`);
  // B asks while A holds it (ROW_LOCKED), and waits for the lease's end with lockRow's own wait.
  const b = await t.lockRow(key, { leaseMs: 30_000, holder: 'B', wait: true, timeoutMs: 10_000 });
  lab.log(`holder B locked row ${PAUSED_ROW} after A's lease ran out (token ${b.token})`);
  await t.append(key, { v: 'B1,' }, { lock: b });
  let late = 'OK';
  try {
    await t.append(key, { v: 'A2,' }, { lock: a });
  } catch (e) {
    late = DbError.from(e).code;
  }
  lab.log(`A woke up and wrote with its old lock: ${late}`);
  await t.unlockRow(b);
  const v = String((await t.get(key))?.['v'] ?? '');
  checks.push({ name: "a paused holder's late write is refused FENCED by the fencing token; the row holds A1 then B1 only", ok: late === ErrorCode.FENCED && v === 'A1,B1,' && b.token > a.token, detail: `tokens A ${a.token} < B ${b.token}; late write ${late}; row ${JSON.stringify(v)}` });
  figures['pausedHolderToken'] = Number(a.token);
  figures['nextHolderToken'] = Number(b.token);
}

function buckets(times: number[], from: number, to: number): Array<[number, number]> {
  const n = Math.max(1, Math.ceil((to - from) / BUCKET_MS));
  const counts = new Array<number>(n).fill(0);
  for (const x of times) {
    const i = Math.floor((x - from) / BUCKET_MS);
    if (i >= 0 && i < n) counts[i]!++;
  }
  return counts.map((c, i) => [i * BUCKET_MS, c]);
}
