/** A plain-text table: first column left-aligned, the others right-aligned (numbers). */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[], indent = '  '): string[] {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: readonly string[]) =>
    indent + cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ').trimEnd();
  return [line(header), indent + widths.map((width) => '-'.repeat(width)).join('  '), ...rows.map(line)];
}

