/**
 * The content of the console kit's built-in pages (web-server.ts): /varz and POST /api/v1/flags,
 * /mem-trackers, /threadz, and the home page's uptime.
 */
import { DbError, ErrorCode, FlagTag, setFlagByOperator, type Flags, type FlagView, type Logger } from '../common';
import { threadKindSums, threadsOf, type ThreadKind, type ThreadRow } from '../common/proc-threads';
import { escapeHtml, htmlTable, raw } from './html';
import { API_PREFIX, TextPage, type WebRequest } from './web-http';

const MEM_TRACKER_DEPTH_MAX = 32;

export interface MemTrackerNode {
  id: string;
  currentBytes: number;
  peakBytes: number;
  children?: MemTrackerNode[];
}

export function flagJson(flags: Flags): Array<Pick<FlagView, 'name' | 'value' | 'default' | 'changed' | 'tags' | 'type' | 'help'>> {
  return flags.view().map((f) => ({ name: f.name, value: f.value, default: f.default, changed: f.changed, tags: f.tags, type: f.type, help: f.help }));
}

export function varzHtml(flags: Flags, req: WebRequest): string | TextPage {
  const all = flags.view();
  if (req.query.has('raw')) return new TextPage(`${all.map((f) => `--${f.name}=${String(f.value)}`).join('\n')}\n`);
  const hidden = (f: FlagView): boolean => f.tags.includes(FlagTag.hidden) || f.tags.includes(FlagTag.test);
  const rows = (fs: FlagView[]): Array<Array<string | ReturnType<typeof raw>>> =>
    fs.map((f) => [f.name, String(f.value), String(f.default), f.changed ? raw('<b>changed</b>') : '', f.tags.join(' '), f.help]);
  const headers = ['flag', 'value', 'default', 'changed', 'tags', 'help'];
  return (
    `<p><a href="/varz?raw">raw</a> · <a href="${API_PREFIX}/varz">JSON</a></p>` +
    htmlTable(headers, rows(all.filter((f) => !hidden(f))), { id: 'flags' }) +
    `<h2>Test and hidden flags</h2>` +
    htmlTable(headers, rows(all.filter(hidden)), { id: 'hidden-flags' })
  );
}

/** POST /api/v1/flags: {name, value, force?} checked, then the flag changed as an operator would. */
export function setFlagFromBody(flags: Flags, log: Logger, body: unknown): { name: string; value: unknown } {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new DbError(ErrorCode.INVALID_ARGUMENT, 'expected a JSON object {name, value, force?}');
  }
  const b = body as Record<string, unknown>;
  const name = b['name'];
  const value = b['value'];
  const force = b['force'];
  if (typeof name !== 'string' || name === '') throw new DbError(ErrorCode.INVALID_ARGUMENT, "'name' must be a non-empty string");
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
    throw new DbError(ErrorCode.INVALID_ARGUMENT, "'value' must be a string, number or boolean", { flag: name });
  }
  if (force !== undefined && typeof force !== 'boolean') throw new DbError(ErrorCode.INVALID_ARGUMENT, "'force' must be a boolean", { flag: name });
  const v = setFlagByOperator(flags, name, value, force ?? false);
  log.info({ flag: name, value: v, force: force ?? false }, 'flag changed at run time');
  return { name, value: v };
}

export function memTrackersHtml(root: MemTrackerNode | undefined): string {
  if (!root) return '<p>No memory trackers.</p>';
  const rows: Array<[ReturnType<typeof raw>, number, number]> = [];
  const walk = (n: MemTrackerNode, depth: number): void => {
    if (depth > MEM_TRACKER_DEPTH_MAX) return;
    rows.push([raw(`${'&nbsp;'.repeat(depth * 4)}${escapeHtml(n.id)}`), n.currentBytes, n.peakBytes]);
    for (const c of n.children ?? []) walk(c, depth + 1);
  };
  walk(root, 0);
  return htmlTable(['id', 'current bytes', 'peak bytes'], rows, { id: 'mem-trackers' });
}

/** "3 d 4 h", "2 h 5 min", "4 min 12 s", "9 s". */
export function formatUptime(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d > 0) return `${d} d ${h} h`;
  if (h > 0) return `${h} h ${m} min`;
  if (m > 0) return `${m} min ${s % 60} s`;
  return `${s} s`;
}

/** /threadz (as YugabyteDB's): this process's threads with their CPU so far, and the sums by kind. */
export interface Threadz {
  pid: number;
  /** False where there is no /proc (not Linux): then no threads are listed. */
  available: boolean;
  byKind: Array<{ kind: ThreadKind; threads: number; userSeconds: number; systemSeconds: number }>;
  threads: ThreadRow[];
}

export function threadzJson(pid = process.pid): Threadz {
  const threads = threadsOf(pid);
  return { pid, available: threads.length > 0, byKind: threadKindSums(threads), threads };
}

const THREAD_KIND_TEXT: Record<ThreadKind, string> = {
  main: 'main: the event loop (all JavaScript: every RPC, Raft round and reply waits its turn here)',
  rocksdb: "rocksdb: RocksDB's background threads (memtable flushes, compactions)",
  other: "other: libuv's pool (RocksDB writes and reads, WAL fdatasyncs, file I/O) and V8's workers (garbage collection, the optimizing compiler); Node names neither",
};

export function threadzHtml(t: Threadz): string {
  if (!t.available) return '<p>No thread list: this machine has no /proc (Linux only).</p>';
  const s = (x: number): string => x.toFixed(2);
  return (
    `<p>Process ${t.pid}: CPU seconds (user, kernel) of each live thread since it started, from /proc/${t.pid}/task. The same sums are on /prometheus-metrics as <code>process_thread_cpu_seconds{kind}</code>.</p>` +
    htmlTable(['kind', 'threads', 'user s', 'kernel s'], t.byKind.map((k) => [THREAD_KIND_TEXT[k.kind], k.threads, s(k.userSeconds), s(k.systemSeconds)]), { id: 'thread-kinds' }) +
    '<h2>Threads</h2>' +
    htmlTable(['thread id', 'name', 'kind', 'user s', 'kernel s'], t.threads.map((r) => [r.tid, r.name, r.kind, s(r.userSeconds), s(r.systemSeconds)]), { id: 'threads' })
  );
}
