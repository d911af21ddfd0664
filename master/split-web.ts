/**
 * The master console's view of splitting (docs/splitting.md): a tablet's partition as people read
 * it (hash range, or key range as hex of the encoded bounds) and the table's split history.
 */
import { escapeHtml } from '../rpc';
import type { TableInfo } from './catalog-types';

export function partitionText(p: { start: number; end: number; keyStart?: string; keyEnd?: string }): string {
  if (p.keyStart || p.keyEnd) return `key [${p.keyStart || '-inf'}, ${p.keyEnd || '+inf'})`;
  return `[0x${p.start.toString(16).padStart(4, '0')}, 0x${p.end.toString(16).padStart(4, '0')})`;
}

/** Completed splits, newest first: parent → children, the split point, when. */
export function splitHistoryHtml(t: TableInfo): string {
  const h = [...(t.splitHistory ?? [])].reverse();
  if (h.length === 0) return '<h2>Split history</h2><p>No split yet.</p>';
  const rows = h
    .map((s) => `<tr><td>${escapeHtml(s.parentId)}</td><td>${s.children.map(escapeHtml).join('<br>')}</td><td>${escapeHtml(s.at)}</td><td>${escapeHtml(new Date(s.atMs).toISOString())}</td></tr>`)
    .join('');
  return `<h2>Split history</h2><table id="split-history"><tr><th>Parent</th><th>Children</th><th>Split at</th><th>Completed</th></tr>${rows}</table>`;
}
