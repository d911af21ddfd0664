/**
 * The WAL archive (raft/wal/wal-archive.ts, docs/backup.md): a FileLogStorage with an archive
 * directory copies every rolled segment and every segment log GC deletes, and the archived segments
 * read back (with the log's own record decoder) to exactly the entries appended; a damaged archived
 * segment is CORRUPTION naming the offset.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../common/errors';
import { silentLogger } from '../../common/log';
import { FileLogStorage } from '../../raft/wal/file-log-storage';
import { readSegmentEntries } from '../../raft/wal/wal-archive';
import { parseSegmentName } from '../../raft/wal/wal-segments';
import { ent } from './log-storage-compliance';

const ROOT = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-wal-archive-'));
afterAll(() => fs.rmSync(ROOT, { recursive: true, force: true }));

describe('WAL archive', () => {
  it('wal archive: rolled and GC-deleted segments are copied; their entries read back exactly; a flipped byte is CORRUPTION', async () => {
    const dir = path.join(ROOT, 'wal');
    const archive = path.join(ROOT, 'archive');
    const log = await FileLogStorage.open(dir, { logger: silentLogger(), segmentBytes: 400, archiveDir: archive });
    const appended = Array.from({ length: 40 }, (_, i) => ent(i + 1, 1, `payload-${i + 1}`));
    for (const e of appended) {
      log.append([e]);
      await log.sync();
    }
    log.compact(30);
    const live = fs.readdirSync(dir).filter((n) => parseSegmentName(n) !== undefined).length;
    await log.close();
    const names = fs.readdirSync(archive).filter((n) => parseSegmentName(n) !== undefined).sort();
    expect(names.length, 'rolled segments archived').toBeGreaterThanOrEqual(3);
    expect(fs.readdirSync(archive).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    // Every entry but those of the active segment (never rolled) is in the archive, once, in order.
    const got = names.flatMap((n) => readSegmentEntries(path.join(archive, n)));
    expect(got.map((e) => e.index)).toEqual(Array.from({ length: got.length }, (_, i) => i + 1));
    expect(got.length).toBeGreaterThanOrEqual(30);
    expect(live).toBeGreaterThanOrEqual(1);
    for (const e of got) expect(Buffer.from(e.data).toString()).toBe(Buffer.from(appended[e.index - 1]!.data).toString());
    const first = path.join(archive, names[0]!);
    const bytes = fs.readFileSync(first);
    bytes[bytes.length - 3] = bytes[bytes.length - 3]! ^ 0x10;
    fs.writeFileSync(first, bytes);
    expect(() => readSegmentEntries(first)).toThrow(expect.objectContaining({ code: ErrorCode.CORRUPTION, message: expect.stringMatching(/damaged record at byte \d+/) }));
  });
});
