/** Plain aligned text tables for people (scripts use --json). */
export function formatTable(headers: readonly string[], rows: ReadonlyArray<ReadonlyArray<string | number | undefined>>): string {
  const cells = [headers.map(String), ...rows.map((r) => headers.map((_, i) => (r[i] === undefined ? '-' : String(r[i]))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n');
}
