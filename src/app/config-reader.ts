// Reading REMESSA_* settings (config.ts): the environment over an optional JSON file
// (REMESSA_CONFIG), each value typed and checked, with the error that names the setting.
import { readFileSync } from 'node:fs';

export class ConfigError extends Error {}

export type Source = Record<string, string | undefined>;

export function loadFileSource(env: Source): Source {
  const file = env['REMESSA_CONFIG'];
  if (!file) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`REMESSA_CONFIG: cannot read ${file}: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(`REMESSA_CONFIG: ${file} must hold a JSON object of REMESSA_* keys`);
  }
  const out: Source = {};
  for (const [k, v] of Object.entries(parsed)) out[k] = v === null ? undefined : String(v);
  return out;
}

export class Reader {
  constructor(private readonly src: Source) {}

  str(name: string, def: string): string {
    const v = this.src[name];
    return v === undefined || v === '' ? def : v;
  }

  optional(name: string): string | null {
    const v = this.src[name];
    return v === undefined || v === '' ? null : v;
  }

  int(name: string, def: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
    const raw = this.src[name];
    if (raw === undefined || raw === '') return def;
    if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
    const n = Number(raw.trim());
    if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
    return n;
  }

  bool(name: string, def: boolean): boolean {
    const raw = this.src[name];
    if (raw === undefined || raw === '') return def;
    const v = raw.trim().toLowerCase();
    if (['1', 'true', 'yes', 'on'].includes(v)) return true;
    if (['0', 'false', 'no', 'off'].includes(v)) return false;
    throw new ConfigError(`${name} must be true or false, got "${raw}"`);
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], def: T): T {
    const v = this.str(name, def);
    if (!(allowed as readonly string[]).includes(v)) {
      throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got "${v}"`);
    }
    return v as T;
  }
}

/** Size with an optional unit: 1073741824, 1GiB, 500MB, 10k. */
export function parseSize(name: string, raw: string, min = 1, max = Number.MAX_SAFE_INTEGER): number {
  const m = /^(\d+)\s*([kmgt]?i?b?)?$/i.exec(raw.trim());
  if (!m) throw new ConfigError(`${name} must be a size such as 1073741824 or 1GiB, got "${raw}"`);
  const unit = (m[2] ?? '').toLowerCase().replace(/i?b$/, '');
  const mult = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }[unit];
  if (mult === undefined) throw new ConfigError(`${name}: unknown unit in "${raw}"`);
  const n = Number(m[1]) * mult;
  if (n < min) throw new ConfigError(`${name} must be at least ${min} byte${min === 1 ? '' : 's'}`);
  if (n > max) throw new ConfigError(`${name} must be at most ${max} bytes`);
  return n;
}
