/**
 * snapshot-isolation: what tessera's transactions promise, shown with two clients' interleavings on a
 * real cluster (rows of the experiment table, each scenario on its own keys):
 *  - lost update prevented, concurrently: two transactions read the same counter and both write it
 *    back; their intents meet and exactly one commits (fail-on-conflict by priority);
 *  - first committer wins: T2 began before T1 committed its write of a row; T2's later write of that
 *    row is refused with TXN_CONFLICT (a committed version newer than T2's read time);
 *  - a snapshot: a transaction's second read of a row returns what its first read did although an
 *    outside write committed in between;
 *  - write skew allowed: two "doctors on call" each read both rows and take themselves off call; the
 *    writes do not overlap, so both commit and nobody is on call — the anomaly snapshot isolation
 *    permits;
 *  - the same write skew with two serializable transactions: their reads took read locks (strong
 *    read intents on both rows), each write meets the other's read lock, and exactly one commits —
 *    somebody stays on call;
 *  - a phantom refused: a serializable scan of the table (read locks on every tablet) and another
 *    transaction's insert of a new row conflict; exactly one of them commits.
 * Every check is about the outcome the isolation level defines, so the experiment passes when tessera
 * behaves as each isolation level must, snapshot isolation's write skew included.
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { Transaction } from '../../client/transaction';
import type { Check, ExperimentOptions, ExperimentResult } from './experiment';
import { EXPERIMENT_TABLE, openExperimentLab, type ExperimentLab } from './experiment-lab';

/** Past max_clock_skew_usec (500 ms by default): a later write is then not uncertain for the reader. */
const PAST_CLOCK_SKEW_MS = 700;

type Outcome = { ok: true } | { ok: false; code: string };

async function outcome(p: Promise<unknown>): Promise<Outcome> {
  try {
    await p;
    return { ok: true };
  } catch (e) {
    return { ok: false, code: e instanceof DbError ? e.code : String(e) };
  }
}

const show = (o: Outcome): string => (o.ok ? 'committed' : o.code);

/** Write then commit; the first error (at the write or at the commit) is the outcome. */
async function writeAndCommit(t: Transaction, id: bigint, v: string): Promise<Outcome> {
  return outcome(
    (async () => {
      await t.table(EXPERIMENT_TABLE).upsert({ id, v });
      await t.commit();
    })(),
  );
}

async function value(lab: ExperimentLab, id: bigint): Promise<string | undefined> {
  return (await lab.client.table(EXPERIMENT_TABLE).get({ id }))?.['v'] as string | undefined;
}

async function readIn(t: Transaction, id: bigint): Promise<string | undefined> {
  return (await t.table(EXPERIMENT_TABLE).get({ id }))?.['v'] as string | undefined;
}

// Long by design (docs/conventions.md): an experiment is a script read top to bottom, its steps the sections of its report; cutting it into functions would hide the order the report follows.
export async function snapshotIsolation(o: ExperimentOptions): Promise<ExperimentResult> {
  const lab = await openExperimentLab(o, 'snapshot-isolation');
  const checks: Check[] = [];
  const figures: Record<string, number | string> = {};
  const table = lab.client.table(EXPERIMENT_TABLE);
  const begin = (priority: number): Promise<Transaction> => lab.client.beginTransaction({ isolation: 'snapshot', priority });
  const beginSerializable = (priority: number): Promise<Transaction> => lab.client.beginTransaction({ isolation: 'serializable', priority });
  try {
    // 1. Two read-modify-writes of one counter, interleaved.
    await table.upsert({ id: 1n, v: '0' });
    const [a, b] = [await begin(0.9), await begin(0.1)];
    const [ra, rb] = [await readIn(a, 1n), await readIn(b, 1n)];
    lab.log(`lost update: T1 and T2 both read counter = ${String(ra)}; each writes ${Number(ra) + 1} back`);
    const [oa, ob] = await Promise.all([writeAndCommit(a, 1n, String(Number(ra) + 1)), writeAndCommit(b, 1n, String(Number(rb) + 1))]);
    const counter = await value(lab, 1n);
    lab.log(`lost update: T1 ${show(oa)}, T2 ${show(ob)}; counter now ${String(counter)}`);
    const one = [oa, ob].filter((x) => x.ok).length === 1;
    checks.push({ name: 'lost update: of two concurrent read-modify-writes of a row exactly one commits', ok: one && counter === '1', detail: `T1 (priority 0.9) ${show(oa)}, T2 (priority 0.1) ${show(ob)}; counter = ${String(counter)} (one increment, none lost silently)` });
    figures['lostUpdateLoser'] = !oa.ok ? `T1: ${oa.code}` : !ob.ok ? `T2: ${ob.code}` : 'none';

    // 2. First committer wins against an older snapshot.
    await table.upsert({ id: 2n, v: 'initial' });
    const t2 = await begin(0.9);
    await readIn(t2, 2n); // fixes T2's read time before T1 commits
    const t1 = await begin(0.1);
    const o1 = await writeAndCommit(t1, 2n, 'T1');
    const o2 = await writeAndCommit(t2, 2n, 'T2');
    const row2 = await value(lab, 2n);
    lab.log(`first committer wins: T1 ${show(o1)}, then T2 (snapshot older than T1's commit) ${show(o2)}; row = ${String(row2)}`);
    checks.push({ name: 'first committer wins: a write over a version committed after the writer\'s snapshot is refused', ok: o1.ok && !o2.ok && o2.code === ErrorCode.TXN_CONFLICT && row2 === 'T1', detail: `T1 ${show(o1)}; T2 ${show(o2)}; row = ${String(row2)}` });

    // 3. A snapshot does not move.
    await table.upsert({ id: 3n, v: 'before' });
    const s = await begin(0.5);
    const first = await readIn(s, 3n);
    await new Promise((r) => setTimeout(r, PAST_CLOCK_SKEW_MS));
    await table.upsert({ id: 3n, v: 'after' });
    const second = await readIn(s, 3n);
    const sc = await outcome(s.commit());
    lab.log(`snapshot: reads ${String(first)} / ${String(second)} around an outside write of 'after' (${PAST_CLOCK_SKEW_MS} ms later); commit ${show(sc)}`);
    checks.push({ name: "a transaction's reads see its snapshot, not a write committed after it", ok: first === 'before' && second === 'before' && (await value(lab, 3n)) === 'after', detail: `first read ${String(first)}, second read ${String(second)}, outside the transaction now ${String(await value(lab, 3n))}` });

    // 4. Write skew: the anomaly snapshot isolation allows.
    await table.upsert({ id: 10n, v: 'on call' });
    await table.upsert({ id: 11n, v: 'on call' });
    const [alice, bob] = [await begin(0.6), await begin(0.4)];
    const seenA = [await readIn(alice, 10n), await readIn(alice, 11n)];
    const seenB = [await readIn(bob, 10n), await readIn(bob, 11n)];
    lab.log(`write skew: Alice sees ${seenA.join(' / ')}, Bob sees ${seenB.join(' / ')}; each, seeing the other on call, goes off call`);
    const [oAlice, oBob] = await Promise.all([writeAndCommit(alice, 10n, 'off'), writeAndCommit(bob, 11n, 'off')]);
    const after = [await value(lab, 10n), await value(lab, 11n)];
    lab.log(`write skew: Alice ${show(oAlice)}, Bob ${show(oBob)}; now ${after.join(' / ')}`);
    checks.push({ name: 'write skew: two transactions writing different rows after reading both both commit (snapshot isolation allows it)', ok: oAlice.ok && oBob.ok && after.every((v) => v === 'off'), detail: `Alice ${show(oAlice)}, Bob ${show(oBob)}; rows now ${after.join(' / ')} — nobody on call, although each saw the other on call` });

    // 5. The same write skew, serializable: the reads' locks make the writes conflict.
    await table.upsert({ id: 20n, v: 'on call' });
    await table.upsert({ id: 21n, v: 'on call' });
    const [carol, dave] = [await beginSerializable(0.6), await beginSerializable(0.4)];
    const seenC = [await readIn(carol, 20n), await readIn(carol, 21n)];
    const seenD = [await readIn(dave, 20n), await readIn(dave, 21n)];
    lab.log(`serializable write skew: Carol sees ${seenC.join(' / ')}, Dave sees ${seenD.join(' / ')} (each read took read locks on both rows); each goes off call`);
    const [oCarol, oDave] = await Promise.all([writeAndCommit(carol, 20n, 'off'), writeAndCommit(dave, 21n, 'off')]);
    const afterSer = [await value(lab, 20n), await value(lab, 21n)];
    lab.log(`serializable write skew: Carol ${show(oCarol)}, Dave ${show(oDave)}; now ${afterSer.join(' / ')}`);
    const serOne = [oCarol, oDave].filter((x) => x.ok).length === 1 && [oCarol, oDave].every((x) => x.ok || x.code === ErrorCode.TXN_CONFLICT || x.code === ErrorCode.TXN_ABORTED);
    checks.push({
      name: 'serializable: the same write skew is refused — exactly one of the two commits, somebody stays on call',
      ok: serOne && afterSer.filter((v) => v === 'on call').length === 1,
      detail: `Carol (priority 0.6) ${show(oCarol)}, Dave (priority 0.4) ${show(oDave)}; rows now ${afterSer.join(' / ')}`,
    });
    figures['serializableWriteSkewLoser'] = !oCarol.ok ? `Carol: ${oCarol.code}` : !oDave.ok ? `Dave: ${oDave.code}` : 'none';

    // 6. A phantom: a serializable scan counts the rows while another transaction inserts one.
    const counting = await beginSerializable(0.7);
    const counted = (await counting.table(EXPERIMENT_TABLE).scan()).length;
    const inserter = await beginSerializable(0.3);
    const oInsert = await writeAndCommit(inserter, 30n, 'new');
    const oCount = await writeAndCommit(counting, 31n, `count ${counted}`);
    const present = [await value(lab, 30n), await value(lab, 31n)];
    lab.log(`phantom: a serializable scan counted ${counted} rows (read locks on every tablet); an insert of row 30 meanwhile ${show(oInsert)}; the scanner's write of its count ${show(oCount)}`);
    checks.push({
      name: 'serializable: a scan and a concurrent insert into the scanned range conflict (no phantom) — exactly one commits',
      ok: [oInsert, oCount].filter((x) => x.ok).length === 1 && (oInsert.ok ? present[0] === 'new' && present[1] === undefined : present[0] === undefined && present[1] === `count ${counted}`),
      detail: `scan (priority 0.7) counted ${counted}; insert (priority 0.3) ${show(oInsert)}; scanner's commit ${show(oCount)}; rows 30 / 31 now ${present.map(String).join(' / ')}`,
    });
    figures['phantomLoser'] = !oInsert.ok ? `insert: ${oInsert.code}` : !oCount.ok ? `scan: ${oCount.code}` : 'none';

    return {
      name: 'snapshot-isolation',
      title: 'Snapshot isolation: lost updates refused, snapshots stable, write skew allowed; serializable refuses write skew and phantoms',
      summary: `A 3-node ${lab.driver.kind} lab (RF 3, 3 tablets); two clients' transactions interleaved by hand on rows of table ${EXPERIMENT_TABLE}: two concurrent read-modify-writes of a counter, a write over a version committed after the writer's snapshot, a snapshot read around an outside write, the two-doctors write skew under snapshot isolation and under serializable isolation, and a serializable scan against a concurrent insert.`,
      checks,
      figures,
      timeline: lab.timeline,
    };
  } finally {
    await lab.close();
  }
}
