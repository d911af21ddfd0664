/** Tiny HTML helpers for the server consoles: escaping, tables and the shared page layout. */
import { humanBytes } from './svg-chart';

/** Marks a string as already-safe HTML (built by these helpers), so htmlTable does not escape it again. */
export class RawHtml {
  constructor(readonly html: string) {}
  toString(): string {
    return this.html;
  }
}

export function raw(html: string): RawHtml {
  return new RawHtml(html);
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

export type Cell = string | number | bigint | boolean | null | undefined | RawHtml;

export function cellHtml(c: Cell): string {
  if (c instanceof RawHtml) return c.html;
  if (c === null || c === undefined) return '';
  return escapeHtml(String(c));
}

export function htmlTable(headers: readonly string[], rows: ReadonlyArray<readonly Cell[]>, opts: { id?: string } = {}): string {
  // A key/value table (every header empty) has no header row.
  const head = headers.some((h) => h !== '') ? headers.map((h) => `<th>${escapeHtml(h)}</th>`).join('') : '';
  const body = rows.map((r) => `<tr>${r.map((c) => `<td>${cellHtml(c)}</td>`).join('')}</tr>`).join('\n');
  const id = opts.id ? ` id="${escapeHtml(opts.id)}"` : '';
  return `<table${id}>${head ? `<thead><tr>${head}</tr></thead>` : ''}<tbody>\n${body}\n</tbody></table>`;
}

export function link(href: string, text: string): RawHtml {
  return raw(`<a href="${escapeHtml(href)}">${escapeHtml(text)}</a>`);
}

export interface NavItem {
  href: string;
  label: string;
}

const STYLE = `body{font-family:system-ui,sans-serif;margin:0;color:#222}
nav{background:#1b2a4a;padding:.5em 1em}nav a{color:#fff;margin-right:1.2em;text-decoration:none}
nav .brand{font-weight:bold;margin-right:2em}main{padding:1em}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;font-size:90%}
th{background:#eef}pre{background:#f6f6f6;padding:.5em;overflow:auto;font-size:85%}
main{max-width:100%;box-sizing:border-box}table{max-width:100%}td{overflow-wrap:break-word}td a,td code,td .long{overflow-wrap:anywhere}nav{overflow-wrap:anywhere}
.bytes{white-space:nowrap;text-decoration:underline dotted #999}`;

/** The page frame every console page shares: server kind and address in the title and the nav bar. */
export function layout(opts: { kind: string; address: string; title: string; nav: readonly NavItem[]; body: string }): string {
  const nav = opts.nav.map((n) => `<a href="${escapeHtml(n.href)}">${escapeHtml(n.label)}</a>`).join('');
  const title = `${opts.kind} ${opts.address} — ${opts.title}`;
  return `<!DOCTYPE html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title><link rel="icon" href="data:,"><style>${STYLE}</style></head>
<body><nav><span class="brand"><a href="/">${escapeHtml(opts.kind)} ${escapeHtml(opts.address)}</a></span>${nav}</nav>
<main><h1>${escapeHtml(opts.title)}</h1>
${opts.body}
</main></body></html>`;
}

/**
 * Bytes as the consoles show them: human units as YugabyteDB's mem-trackers (`33.0M`), the exact
 * count on hover (title). The JSON twins keep the exact numbers.
 */
export function bytesCell(bytes: number): RawHtml {
  return raw(`<span class="bytes" title="${Math.round(bytes)} bytes">${humanBytes(bytes)}</span>`);
}
