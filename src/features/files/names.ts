// File names as users send them, made safe to store and to offer back in Content-Disposition:
// no path parts, no control characters, no Windows device names, at most 255 UTF-8 bytes.
import { invalid } from '../../platform/errors.js';

// C0/C1 controls, DEL, and Unicode bidi overrides (which can disguise an extension).
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

// Windows device names: a file saved under one of them (any case, with any extension, trailing
// spaces before the dot ignored) opens the device instead, so a recipient could not save it.
const RESERVED =
  /^(con|prn|aux|nul|com[0-9\u00b9\u00b2\u00b3]|lpt[0-9\u00b9\u00b2\u00b3]|conin\$|conout\$)[ .]*(\..*)?$/i;

export function sanitizeFileName(raw: string): string {
  const name = raw.normalize('NFC').trim();
  if (CONTROL.test(name)) throw invalid('file name contains control characters');
  const segments = name.split(/[/\\]/);
  if (segments.some((s) => s === '..')) throw invalid('file name must not contain path parts');
  // Clients such as old browsers send "C:\\dir\\file.txt": keep only the last part.
  const base = segments[segments.length - 1]!.trim();
  if (base === '' || base === '.' || base === '..') throw invalid('file name is empty or invalid');
  if (RESERVED.test(base)) throw invalid('file name is a reserved device name (CON, NUL, COM1…)');
  if (Buffer.byteLength(base, 'utf8') > 255) throw invalid('file name longer than 255 bytes');
  return base;
}

/** "report.pdf", 2 → "report (2).pdf"; a name without extension gets the suffix at the end. */
export function numberedName(name: string, n: number): string {
  if (n === 0) return name;
  const dot = name.lastIndexOf('.');
  const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ''];
  const tail = ` (${n})${ext}`;
  // Stay within 255 bytes by shortening the stem, a whole character at a time.
  const chars = [...stem];
  while (chars.length > 1 && Buffer.byteLength(chars.join('') + tail, 'utf8') > 255) chars.pop();
  return chars.join('') + tail;
}
