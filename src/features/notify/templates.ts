// Message templates per language (docs/notifications.md): templates/<lang>/<kind>.txt holds the e-mail (first
// line `Subject: …`, then the body); templates/<lang>/<kind>.sms.txt the short SMS text. Any file
// may be overridden by the same relative path under REMESSA_TEMPLATES_DIR. Files are read on each
// render, so an operator's edit applies without a restart.
//
// Syntax: {{name}} substitutes a variable; {{#name}}…{{/name}} keeps its text only when the
// variable is non-empty, {{^name}}…{{/name}} only when it is empty. Unknown variables are an error.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Lang } from '../../app/config.js';

export type NotificationKind =
  | 'password-pin'
  | 'recovery-locked'
  | 'file-link'
  | 'download-pin'
  | 'download-confirmation'
  | 'quota-warning'
  | 'request-invite'
  | 'request-pin'
  | 'request-batch';
export const NOTIFICATION_KINDS: readonly NotificationKind[] = [
  'password-pin',
  'recovery-locked',
  'file-link',
  'download-pin',
  'download-confirmation',
  'quota-warning',
  'request-invite',
  'request-pin',
  'request-batch',
];
export type Channel = 'email' | 'sms';

export interface Rendered {
  /** Empty for SMS. */
  subject: string;
  text: string;
}

/** Templates shipped with the package: <package root>/templates (dist/src/features/notify → ../../../../). */
export const BUILTIN_TEMPLATES = fileURLToPath(new URL('../../../../templates/', import.meta.url));

export class TemplateError extends Error {}

export class Templates {
  constructor(private readonly overrideDir: string | null) {}

  private async load(lang: Lang, file: string): Promise<string> {
    const dirs = this.overrideDir ? [this.overrideDir, BUILTIN_TEMPLATES] : [BUILTIN_TEMPLATES];
    for (const dir of dirs) {
      try {
        return await readFile(path.join(dir, lang, file), 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
    throw new TemplateError(`no template ${lang}/${file}`);
  }

  async render(
    channel: Channel,
    lang: Lang,
    kind: NotificationKind,
    vars: Record<string, string>,
  ): Promise<Rendered> {
    if (channel === 'sms') {
      const source = await this.load(lang, `${kind}.sms.txt`);
      const safe =
        vars['fileName'] === undefined ? vars : { ...vars, fileName: smsFileName(vars['fileName']) };
      return { subject: '', text: substitute(source, safe, kind).trim() };
    }
    const source = (await this.load(lang, `${kind}.txt`)).replace(/\r\n/g, '\n');
    const m = /^Subject:[ \t]*(.*)\n/.exec(source);
    if (!m) throw new TemplateError(`template ${lang}/${kind}.txt must start with a "Subject: " line`);
    const subject = substitute(m[1]!, vars, kind).replace(/\s+/g, ' ').trim();
    // A section left out leaves blank lines behind: keep at most one empty line in a row.
    const body = substitute(source.slice(m[0].length), vars, kind).replace(/\n{3,}/g, '\n\n');
    const text = `${body.trim()}\n`;
    return { subject, text };
  }
}

/** The most of a file name an SMS shows (characters, with the extension and the ellipsis). */
export const SMS_FILE_NAME_CHARS = 40;

/**
 * A file name as an SMS shows it (the templates quote it). The name is the sender's text going out
 * from the service's own number, so it must read as a file name, not as a message: no control or
 * invisible characters, no quote that ends the quoting, nothing a phone makes into a link or a
 * mail address (URL schemes go; "@" and every dot but the extension's become "_"), and at most
 * SMS_FILE_NAME_CHARS characters, shortened in the middle so the extension stays visible.
 */
export function smsFileName(name: string): string {
  let clean = name
    .replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, ' ')
    .replace(/["\u201c\u201d\u201e\u00ab\u00bb]/g, "'")
    .replace(/\b(?:https?|ftp|file|mailto|tel|sms|data|javascript):/gi, '')
    .replace(/@/g, '_')
    .replace(/\s+/g, ' ')
    .trim();
  const dot = clean.lastIndexOf('.');
  const ext = dot > 0 && /^\.[\p{L}\p{N}]{1,8}$/u.test(clean.slice(dot)) ? clean.slice(dot) : '';
  clean = clean.slice(0, clean.length - ext.length).replace(/\./g, '_') + ext;
  const chars = [...clean];
  if (chars.length <= SMS_FILE_NAME_CHARS) return clean || '_';
  const extChars = [...ext];
  const keep = SMS_FILE_NAME_CHARS - 1 - extChars.length;
  return `${chars.slice(0, keep).join('').trimEnd()}…${ext}`;
}

function lookup(vars: Record<string, string>, name: string, kind: string): string {
  const v = vars[name];
  if (v === undefined) throw new TemplateError(`template ${kind}: no value for {{${name}}}`);
  return v;
}

export function substitute(source: string, vars: Record<string, string>, kind = 'inline'): string {
  const sections = source.replace(
    /\{\{([#^])(\w+)\}\}([\s\S]*?)\{\{\/\2\}\}/g,
    (_all, mode: string, name: string, inner: string) => {
      const present = (vars[name] ?? '') !== '';
      return (mode === '#') === present ? inner : '';
    },
  );
  // Single pass: a value that itself contains {{x}} is not expanded again.
  return sections.replace(/\{\{(\w+)\}\}/g, (_all, name: string) => lookup(vars, name, kind));
}

/** For HTML bodies: the same substitution with every value escaped. */
export function escapeHtml(value: string): string {
  return value.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
}

const LOCALE: Record<Lang, string> = { pt: 'pt-BR', en: 'en-GB', es: 'es-ES' };

/** "3 minutos", "90 seconds": a validity period in words. */
export function formatDuration(seconds: number, lang: Lang): string {
  const [value, unit] =
    seconds % 3600 === 0 && seconds >= 3600
      ? [seconds / 3600, 'hour']
      : seconds % 60 === 0 && seconds >= 60
        ? [seconds / 60, 'minute']
        : [seconds, 'second'];
  return new Intl.NumberFormat(LOCALE[lang], { style: 'unit', unit, unitDisplay: 'long' }).format(value);
}

const BINARY_UNITS = ['KiB', 'MiB', 'GiB', 'TiB'];

/** "1,5 MiB" / "1.5 MiB": a file size for people, in binary units (as the portal shows it). */
export function formatSize(bytes: number, lang: Lang): string {
  if (bytes < 1024)
    return new Intl.NumberFormat(LOCALE[lang], { style: 'unit', unit: 'byte', unitDisplay: 'long' }).format(
      bytes,
    );
  let i = 0;
  let n = bytes / 1024;
  while (n >= 1024 && i < BINARY_UNITS.length - 1) {
    n /= 1024;
    i++;
  }
  const number = new Intl.NumberFormat(LOCALE[lang], { maximumFractionDigits: n >= 100 ? 0 : 1 }).format(n);
  return `${number} ${BINARY_UNITS[i]}`;
}

/**
 * A date and time in the server's zone, in the recipient's language, with that zone named
 * ("1 May 2030 at 14:00 UTC"): the reader may live in another one.
 */
export function formatDateTime(ms: number, lang: Lang): string {
  return new Intl.DateTimeFormat(LOCALE[lang], {
    day: 'numeric',
    month: 'long',
    year: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    timeZoneName: 'short',
  }).format(ms);
}
