// `remessa …` under a pseudo-terminal (util-linux `script`), as a person at a terminal runs it, and
// what they end up seeing: screen() replays the output (carriage returns, erasures, cursor moves,
// line wrapping) into the lines left on the screen, so a progress bar that overwrites a message,
// or a message glued to a bar, shows as the garbled line it is.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { cleanEnv, ROOT } from './cli.js';

export const COLUMNS = 200;

export interface TerminalRun {
  /** everything written to the terminal so far */
  readonly raw: string;
  exited: Promise<{ code: number | null; raw: string }>;
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** `remessa ARGS` on a terminal COLUMNS wide (stdout and stderr both go to it). */
export function remessaOnTerminal(env: Record<string, string>, args: string[], cwd = ROOT): TerminalRun {
  const command = [process.execPath, path.join(ROOT, 'bin/remessa.js'), ...args].map(quote).join(' ');
  const child = spawn('script', ['-qfec', `stty cols ${COLUMNS} rows 50; exec ${command}`, '/dev/null'], {
    cwd,
    env: cleanEnv(env),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let raw = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    raw += d;
  });
  const exited = new Promise<{ code: number | null; raw: string }>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, raw }));
  });
  return {
    get raw() {
      return raw;
    },
    exited,
  };
}

export interface Screen {
  /** the lines left on the screen, trailing blanks removed, trailing empty lines dropped */
  lines: string[];
  /** where the cursor ends: row lines.length and column 0 when what comes next (a shell prompt) starts a line of its own */
  row: number;
  column: number;
}

/** Replays terminal output onto a screen COLUMNS wide (with no height limit). */
export function screen(raw: string, width = COLUMNS): Screen {
  const rows: string[][] = [[]];
  let row = 0;
  let col = 0;
  let saved = { row: 0, col: 0 };
  const line = () => {
    while (rows.length <= row) rows.push([]);
    return rows[row]!;
  };
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i]!;
    if (ch === '\r') col = 0;
    else if (ch === '\n') row++;
    else if (ch === '\b') col = Math.max(0, col - 1);
    else if (ch === '\x1b') {
      // after ESC: a CSI sequence (parameters, a final letter), or DECSC/DECRC (save/restore cursor)
      const esc = /^(?:\[([?\d;]*)([A-Za-z])|([78]))/.exec(raw.slice(i + 1, i + 16));
      if (!esc) throw new Error(`unknown escape sequence at ${i}: ${JSON.stringify(raw.slice(i, i + 8))}`);
      i += esc[0].length;
      if (esc[3] === '7') saved = { row, col };
      else if (esc[3] === '8') ({ row, col } = saved);
      else {
        const n = Number((esc[1] ?? '').replace('?', '') || 0);
        const cells = line();
        switch (esc[2]) {
          case 'K':
            if (n === 0) cells.length = Math.min(cells.length, col);
            else if (n === 1) cells.fill(' ', 0, Math.min(cells.length, col + 1));
            else cells.length = 0;
            break;
          case 'G':
            col = Math.max(0, n - 1);
            break;
          case 'A':
            row = Math.max(0, row - Math.max(1, n));
            break;
          case 'B':
            row += Math.max(1, n);
            break;
          case 'C':
            col += Math.max(1, n);
            break;
          case 'D':
            col = Math.max(0, col - Math.max(1, n));
            break;
          // colours, cursor shown or hidden, line wrapping on or off: nothing on the screen
          case 'm':
          case 'h':
          case 'l':
            break;
          default:
            throw new Error(`unhandled escape sequence ${JSON.stringify(esc[0])}`);
        }
      }
    } else {
      if (col >= width) {
        row++;
        col = 0;
      }
      const cells = line();
      while (cells.length < col) cells.push(' ');
      cells[col++] = ch;
    }
  }
  const lines = rows.map((r) => r.join('').trimEnd());
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return { lines, row, column: col };
}
