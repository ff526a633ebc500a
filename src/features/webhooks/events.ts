// Webhook event types and their JSON (schemas in docs/webhooks.md). Every event is
//   {"id": "evt_…", "type": "file.uploaded", "version": 1, "created": "<ISO 8601>", "data": {…}}
// `version` changes only when a field changes meaning or goes away; fields may be added.
// Nothing secret goes in: no download token, PIN or link; addresses are masked.

import type { FileRow, LinkRow } from '../../platform/sql/schema.js';
import type { AuditEventName } from '../audit/audit-log.js';
import { maskAddress } from '../users/validation.js';

export const EVENT_VERSION = 1;

export const EVENT_TYPES = [
  'file.uploaded',
  'file.downloaded',
  'notification.sent',
  'notification.failed',
  'file.retired',
  'file.purged',
  'link.locked',
  'user.locked',
  'quota.warning',
  'request.file_received',
  'request.completed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** The audit row each event is made from (in the transaction that writes that row). */
export const EVENT_OF_AUDIT: Partial<Record<AuditEventName, EventType>> = {
  upload: 'file.uploaded',
  download: 'file.downloaded',
  'notify.sent': 'notification.sent',
  'notify.failed': 'notification.failed',
  'file.retired': 'file.retired',
  'file.purged': 'file.purged',
  'link.locked': 'link.locked',
  'user.locked': 'user.locked',
  'quota.warning': 'quota.warning',
  'request.file_received': 'request.file_received',
  'request.completed': 'request.completed',
};

export function isEventType(v: string): v is EventType {
  return (EVENT_TYPES as readonly string[]).includes(v);
}

export interface WebhookEvent {
  id: string;
  type: EventType;
  version: number;
  created: string;
  data: Record<string, unknown>;
}

/** A file as events show it: the File entry's fields without its link (which holds a token). */
export function fileOf(f: FileRow): Record<string, unknown> {
  return {
    id: f.id,
    name: f.name,
    length: f.length,
    modified: f.created_at,
    sha256: f.sha256,
    expires: f.state === 'area' ? f.expires_at : f.purge_at,
  };
}

/** A link as events show it: whose it is, never its token. */
export function linkOf(l: LinkRow): Record<string, unknown> {
  const address = l.recipient_email ?? l.recipient_mobile;
  return {
    id: l.id,
    kind: l.kind,
    ...(address ? { channel: l.recipient_email ? 'email' : 'sms', address: maskAddress(address) } : {}),
  };
}
