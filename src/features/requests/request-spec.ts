// What a new upload request asks for (POST {base}/requests), checked before anything is written:
// every refusal is a 400 naming the field (docs/requests.md).
import { invalid } from '../../platform/errors.js';
import { isEmail, normalizeMobile } from '../users/validation.js';

const DAY = 24 * 3600 * 1000;

import { isoInstant } from '../../platform/time.js';
import {
  MAX_INVITES,
  MAX_REQUEST_DAYS,
  MAX_REQUEST_FILES,
  MESSAGE_MAX,
  TITLE_MAX,
} from './request-limits.js';

export { MAX_INVITES, MAX_REQUEST_DAYS, MAX_REQUEST_FILES, MESSAGE_MAX, TITLE_MAX };

/** The body as the route received it (types already checked by its schema). */
export interface RequestInput {
  title: string;
  message?: string | undefined;
  emails?: string[] | undefined;
  mobiles?: string[] | undefined;
  maxFiles?: number | undefined;
  maxFileBytes?: number | undefined;
  maxTotalBytes?: number | undefined;
  expires?: string | undefined;
  reusable?: boolean | undefined;
  d?: string | undefined;
}

export interface RequestSpec {
  title: string;
  message: string;
  emails: string[];
  mobiles: string[];
  maxFiles: number;
  maxFileBytes: number;
  maxTotalBytes: number;
  expiresAt: number;
  reusable: boolean;
  d: string | undefined;
}

const whole = (name: string, v: number, min: number, max: number) => {
  if (!Number.isSafeInteger(v) || v < min || v > max)
    throw invalid(`${name}: a whole number from ${min} to ${max}`);
  return v;
};

/**
 * The request's values with their defaults: 10 files, the server's largest file per file, the
 * files' sum in total, the server's link validity.
 */
export function requestSpec(
  input: RequestInput,
  now: number,
  limits: { maxFileSize: number; linkDays: number },
): RequestSpec {
  const title = input.title.trim();
  if (title === '' || title.length > TITLE_MAX) throw invalid(`title: 1 to ${TITLE_MAX} characters`);
  const message = (input.message ?? '').trim();
  if (message.length > MESSAGE_MAX) throw invalid(`message: at most ${MESSAGE_MAX} characters`);
  const emails = uniq((input.emails ?? []).map((e) => e.trim().toLowerCase()));
  for (const e of emails)
    if (!isEmail(e)) throw invalid(`emails: invalid e-mail address "${e.slice(0, 80)}"`);
  const mobiles = uniq(
    (input.mobiles ?? []).map((m) => {
      const n = normalizeMobile(m);
      if (!n) throw invalid(`mobiles: invalid mobile number "${m.slice(0, 40)}"`);
      return n;
    }),
  );
  if (emails.length + mobiles.length > MAX_INVITES)
    throw invalid(`emails, mobiles: at most ${MAX_INVITES} invited addresses`);
  const maxFiles = whole('maxFiles', input.maxFiles ?? 10, 1, MAX_REQUEST_FILES);
  const maxFileBytes = whole('maxFileBytes', input.maxFileBytes ?? limits.maxFileSize, 1, limits.maxFileSize);
  const maxTotalBytes = whole(
    'maxTotalBytes',
    input.maxTotalBytes ?? Math.min(Number.MAX_SAFE_INTEGER, maxFileBytes * maxFiles),
    1,
    Number.MAX_SAFE_INTEGER,
  );
  return {
    title,
    message,
    emails,
    mobiles,
    maxFiles,
    maxFileBytes,
    maxTotalBytes,
    expiresAt: expiryOf(input.expires, now, limits.linkDays),
    reusable: input.reusable ?? false,
    d: input.d,
  };
}

function expiryOf(value: string | undefined, now: number, linkDays: number): number {
  if (value === undefined) return now + linkDays * DAY;
  const at = isoInstant(value);
  if (!Number.isFinite(at)) throw invalid('expires: an ISO 8601 date or time');
  if (at <= now) throw invalid('expires: must be in the future');
  if (at > now + MAX_REQUEST_DAYS * DAY) throw invalid(`expires: at most ${MAX_REQUEST_DAYS} days ahead`);
  return at;
}

const uniq = (xs: string[]) => [...new Set(xs)];
