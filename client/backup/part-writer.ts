/**
 * Writes one table's lines into part files `<table>/<prefix>-NNNNN.ndjson` of an export directory,
 * a new part every PART_BYTES_MAX bytes, each fsynced and closed with its byte count and sha256
 * (docs/backup.md); a part closes once it reaches that size, after the line or page that got it
 * there. Lines are gathered into a buffer of WRITE_BYTES bytes before each write: one write call per
 * line made the export's cost mostly system calls.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { RowDigest, type PartEntry } from './backup-format';

/** A part file is closed once it reaches this many bytes. */
export const PART_BYTES_MAX = 64 * 1024 * 1024;
/** Bytes gathered before one write to the part file. */
const WRITE_BYTES = 1 << 20;

export class PartWriter {
  readonly parts: PartEntry[] = [];
  /** Every line in order (a full export's table digest). */
  readonly digest = new RowDigest();
  private part: { file: string; fd: number; rows: number; bytes: number; hash: RowDigest; tablet?: number } | undefined;
  private pending: Uint8Array[] = [];
  /** The tablet (its ordinal) whose lines the parts hold now: a full export's parts are per tablet. */
  private tablet: number | undefined;
  private pendingBytes = 0;

  constructor(
    private readonly dir: string,
    private readonly table: string,
    private readonly prefix: 'part' | 'cells',
  ) {
    fs.mkdirSync(path.join(dir, table), { recursive: true });
  }

  get lines(): number {
    return this.digest.rows;
  }

  add(line: string): void {
    this.addLines(Buffer.from(line, 'utf8'), 1);
  }

  /** The lines from here on are tablet `ordinal`'s: the part open now is closed, the next is named after it. */
  startTablet(ordinal: number): void {
    if (this.tablet === ordinal) return;
    this.closePart();
    this.tablet = ordinal;
  }

  /** `rows` whole lines at once, as UTF-8 bytes (a scan page of export lines). */
  addLines(bytes: Uint8Array, rows: number): void {
    if (rows === 0) return;
    if (!this.part) {
      const tablet = this.tablet === undefined ? '' : `-t${String(this.tablet).padStart(5, '0')}`;
      const file = path.join(this.table, `${this.prefix}${tablet}-${String(this.parts.length).padStart(5, '0')}.ndjson`);
      this.part = { file, fd: fs.openSync(path.join(this.dir, file), 'w'), rows: 0, bytes: 0, hash: new RowDigest(), ...(this.tablet !== undefined ? { tablet: this.tablet } : {}) };
    }
    this.pending.push(bytes);
    this.pendingBytes += bytes.byteLength;
    this.part.rows += rows;
    this.part.bytes += bytes.byteLength;
    this.part.hash.addLines(bytes, rows);
    this.digest.addLines(bytes, rows);
    if (this.pendingBytes >= WRITE_BYTES) this.writePending();
    if (this.part.bytes >= PART_BYTES_MAX) this.closePart();
  }

  private writePending(): void {
    if (this.pending.length === 0 || !this.part) return;
    fs.writeSync(this.part.fd, this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending));
    this.pending = [];
    this.pendingBytes = 0;
  }

  private closePart(): void {
    if (!this.part) return;
    this.writePending();
    fs.fsyncSync(this.part.fd);
    fs.closeSync(this.part.fd);
    this.parts.push({ file: this.part.file, rows: this.part.rows, bytes: this.part.bytes, sha256: this.part.hash.hex(), ...(this.part.tablet !== undefined ? { tablet: this.part.tablet } : {}) });
    this.part = undefined;
  }

  /** Close the last part; answers the parts (the table's lines, fsynced). */
  finish(): PartEntry[] {
    this.closePart();
    return this.parts;
  }

  /** Drop an unfinished part's descriptor (an aborted export; its files are redone on resume). */
  abandon(): void {
    if (this.part) fs.closeSync(this.part.fd);
    this.part = undefined;
  }
}
