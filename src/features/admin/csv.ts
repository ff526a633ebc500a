// CSV as RFC 4180 writes it: cells separated by commas, lines ended by CRLF, a cell quoted (its
// quotes doubled) when it holds a comma, a quote, CR or LF. A cell that begins with `=`, `+`, `-`
// or `@` gets a leading single quote, so a spreadsheet shows it as text instead of running it as
// a formula (formula injection: an audit row's detail or user name is written by anyone).
const NEEDS_QUOTES = /[",\r\n]/;
const FORMULA = /^[=+\-@]/;

export type CsvValue = string | number | null;

export function csvCell(value: CsvValue): string {
  if (value === null) return '';
  let text = String(value);
  if (FORMULA.test(text)) text = `'${text}`;
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** One line, CRLF included. */
export const csvLine = (cells: readonly CsvValue[]): string => `${cells.map(csvCell).join(',')}\r\n`;
