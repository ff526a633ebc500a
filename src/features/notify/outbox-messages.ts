// What the outbox holds and shows: the messages producers hand in, the sealed payload stored with
// each (the full text and a copy with its secrets masked, the only one the log may show), and the
// rows as `remessa outbox list` and `show` present them.

import type { Lang } from '../../app/config.js';
import { redactUrl } from '../../platform/logger.js';
import type { OutboxRow } from '../../platform/sql/schema.js';
import type { Channel, NotificationKind, Templates } from './templates.js';
import type { OutboxChannel } from './transports.js';

/** A message rendered by its producer, e.g. a webhook event body (it must carry no secret). */
export interface RawMessage {
  channel: OutboxChannel;
  recipient: string;
  kind: string;
  text: string;
  fileId?: number | null;
  userName?: string | null;
}

export interface NotificationRequest {
  channel: Channel;
  /** E-mail address (channel 'email') or E.164 mobile number (channel 'sms'). */
  recipient: string;
  lang: Lang;
  kind: NotificationKind;
  /** Template variables. `pin` and `link` are secrets: masked wherever the message is logged. */
  vars: Record<string, string>;
  fileId?: number | null;
  /** The account the message concerns (uploader, or the user recovering a password). */
  userName?: string | null;
}

export type OutboxStatus = 'pending' | 'sent' | 'failed' | 'logged';

export interface OutboxEntry {
  id: number;
  channel: string;
  recipient: string;
  kind: string;
  status: string;
  attempts: number;
  nextAttemptAt: number;
  lastError: string | null;
  fileId: number | null;
  userName: string | null;
  createdAt: number;
  sentAt: number | null;
  lastAttemptAt: number | null;
}

export interface OutboxMessage extends OutboxEntry {
  lang: string;
  subject: string;
  text: string;
}

/** What a row's `payload` holds, sealed with the server secret. */
export interface SealedPayload {
  lang: Lang;
  subject: string;
  text: string;
  /** The same message with secrets masked: what the log may show. */
  masked: { subject: string; text: string };
}

/** How each secret variable is shown in logs. */
const MASKS: Record<string, (value: string) => string> = {
  pin: () => '******',
  link: (value) => redactUrl(value),
};

/** Renders a message in the recipient's language, and again with its secrets masked. */
export async function renderPayload(
  templates: Templates,
  message: NotificationRequest,
): Promise<SealedPayload> {
  const { channel, lang, kind, vars } = message;
  const rendered = await templates.render(channel, lang, kind, vars);
  const maskedVars: Record<string, string> = { ...vars };
  for (const [name, mask] of Object.entries(MASKS)) {
    if (vars[name] !== undefined) maskedVars[name] = mask(vars[name]);
  }
  const maskedRender = await templates.render(channel, lang, kind, maskedVars);
  const masked = { subject: scrub(maskedRender.subject, vars), text: scrub(maskedRender.text, vars) };
  return { lang, subject: rendered.subject, text: rendered.text, masked };
}

/** The payload of a message its producer rendered: it carries no secret, so nothing is masked. */
export function rawPayload(message: RawMessage): SealedPayload {
  const { text } = message;
  return { lang: 'en', subject: message.kind, text, masked: { subject: message.kind, text } };
}

/** Belt and braces: no secret value survives in the masked text, whatever the template did. */
function scrub(text: string, vars: Record<string, string>): string {
  let out = text;
  for (const [name, mask] of Object.entries(MASKS)) {
    const value = vars[name];
    if (value) out = out.replaceAll(value, mask(value));
  }
  return out;
}

export function entryOf(row: OutboxRow): OutboxEntry {
  return {
    id: row.id,
    channel: row.channel,
    recipient: row.recipient,
    kind: row.kind,
    status: row.status,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    lastError: row.last_error,
    fileId: row.file_id,
    userName: row.user_name,
    createdAt: row.created_at,
    sentAt: row.sent_at,
    lastAttemptAt: row.last_attempt_at,
  };
}
