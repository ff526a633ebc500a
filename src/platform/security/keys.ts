// Server secret and the keys derived from it. The secret comes from REMESSA_SECRET or is generated
// once and kept in the data dir (mode 0600), so every instance sharing the data dir agrees on it.
import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  hkdfSync,
  randomBytes,
  randomFillSync,
  randomInt,
  timingSafeEqual,
} from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export function loadOrCreateSecret(dataDir: string, explicit: string | null): string {
  if (explicit) return explicit;
  const file = path.join(dataDir, 'secret');
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const secret = randomBytes(32).toString('base64url');
  try {
    // 'wx': if another process created it first, fall through and read theirs.
    writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
    return secret;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return readFileSync(file, 'utf8').trim();
  }
}

/** The keys derived from one secret. */
interface KeySet {
  jwtCryptoKey: Promise<CryptoKey>;
  sealKey: Buffer;
  hmacKey: Buffer;
  credentialKey: Buffer;
}

function keySet(secret: string): KeySet {
  const derive = (info: string) => Buffer.from(hkdfSync('sha256', secret, 'remessa', info, 32));
  return {
    // Imported once for Web Crypto: given raw bytes, jose imports them again on every signature
    // and verification (a few percent of a bearer upload's CPU in a profile).
    jwtCryptoKey: crypto.subtle.importKey(
      'raw',
      new Uint8Array(derive('jwt-hs256')),
      { name: 'HMAC', hash: 'SHA-256' },
      false,
      ['sign', 'verify'],
    ),
    sealKey: derive('seal-aes-256-gcm'),
    hmacKey: derive('hmac-sha256'),
    credentialKey: derive('credential-cache'),
  };
}

function unsealWith(key: Buffer, sealed: string): string {
  const buf = Buffer.from(sealed, 'base64url');
  const d = createDecipheriv('aes-256-gcm', key, buf.subarray(0, 12));
  d.setAuthTag(buf.subarray(12, 28));
  return Buffer.concat([d.update(buf.subarray(28)), d.final()]).toString('utf8');
}

/**
 * The keys of the server secret, and during a rotation those of the previous one
 * (REMESSA_PREVIOUS_SECRET, docs/operations.md): everything is signed, sealed and hashed with the
 * current keys; tokens, sealed values and PINs made with the previous ones are still accepted,
 * until `remessa secret reseal` has re-sealed what is stored and the old tokens and PINs expired.
 */
export class Keys {
  private readonly current: KeySet;
  private readonly previous: KeySet | null;
  /** Signs bearer tokens. */
  readonly jwtCryptoKey: Promise<CryptoKey>;

  constructor(secret: string, previousSecret: string | null = null) {
    this.current = keySet(secret);
    this.previous = previousSecret && previousSecret !== secret ? keySet(previousSecret) : null;
    this.jwtCryptoKey = this.current.jwtCryptoKey;
  }

  /** The keys a bearer token's signature may be checked with: the current one first. */
  async jwtVerificationKeys(): Promise<CryptoKey[]> {
    const keys = [await this.current.jwtCryptoKey];
    if (this.previous) keys.push(await this.previous.jwtCryptoKey);
    return keys;
  }

  /** AES-256-GCM, output base64url(iv | tag | ciphertext). */
  seal(plain: string): string {
    const iv = secureRandom(12);
    const c = createCipheriv('aes-256-gcm', this.current.sealKey, iv);
    const body = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
    return Buffer.concat([iv, c.getAuthTag(), body]).toString('base64url');
  }

  /** Opens what seal() made, with the current keys or the previous secret's; throws if neither. */
  unseal(sealed: string): string {
    try {
      return unsealWith(this.current.sealKey, sealed);
    } catch (err) {
      if (!this.previous) throw err;
      return unsealWith(this.previous.sealKey, sealed);
    }
  }

  /**
   * `sealed` sealed anew with the current keys, or null if it already is (what
   * `remessa secret reseal` writes back). Throws if no key opens it.
   */
  resealed(sealed: string): string | null {
    try {
      unsealWith(this.current.sealKey, sealed);
      return null;
    } catch (err) {
      if (!this.previous) throw err;
      return this.seal(unsealWith(this.previous.sealKey, sealed));
    }
  }

  /** Keyed hash for short secrets (PINs): a database dump cannot brute-force 10^6 codes offline. */
  hmac(value: string): string {
    return createHmac('sha256', this.current.hmacKey).update(value).digest('base64url');
  }

  /** Whether `hash` is hmac(value), by the current keys or the previous secret's (constant time). */
  hmacMatches(value: string, hash: string): boolean {
    const by = (key: Buffer) => safeEqual(createHmac('sha256', key).update(value).digest('base64url'), hash);
    // Both are computed, so the time taken does not tell which secret made the hash.
    const current = by(this.current.hmacKey);
    const previous = this.previous ? by(this.previous.hmacKey) : false;
    return current || previous;
  }

  /**
   * Key of a verified name and password in the credential cache (src/features/auth/credential-cache.ts):
   * a keyed hash, so the cache never holds anything that recovers the password.
   */
  credentialHash(name: string, password: string): string {
    return createHmac('sha256', this.current.credentialKey)
      .update(JSON.stringify([name, password]))
      .digest('base64url');
  }
}

const RANDOM_BLOCK = 4096;
const randomBlock = Buffer.alloc(RANDOM_BLOCK);
let randomOffset = RANDOM_BLOCK;

/**
 * Fresh bytes from the CSPRNG, served from a 4 KiB block drawn at once (as Node does for
 * randomUUID): one draw per call cost ~3 µs in a loop and ~10 µs in a busy server, and every
 * upload makes several (blob key, link token, sealing IV). Bytes are never served twice.
 */
export function secureRandom(n: number): Buffer {
  if (n > RANDOM_BLOCK) return randomBytes(n);
  if (randomOffset + n > RANDOM_BLOCK) {
    randomFillSync(randomBlock);
    randomOffset = 0;
  }
  const out = Buffer.from(randomBlock.subarray(randomOffset, randomOffset + n));
  randomOffset += n;
  return out;
}

/** 256 random bits, base64url: download, change and bearer-token ids. */
export function randomToken(): string {
  return secureRandom(32).toString('base64url');
}

/** Lookup key for a bearer-style secret (high entropy, so a plain hash is enough). */
export function sha256(value: string): string {
  return createHash('sha256').update(value).digest('base64url');
}

export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export function randomPin(): string {
  return String(randomInt(0, 1_000_000)).padStart(6, '0');
}
