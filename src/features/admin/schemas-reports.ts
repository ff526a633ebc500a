// The shapes of the admin reports' answers (docs/admin.md: audit, transfers, outbox, statistics),
// named so openapi.json lists them under components and the tests check every answer against
// them (test/helpers/responses.ts). Closed objects, as in src/platform/http/schemas.ts.
import { type Static, type TSchema, Type } from 'typebox';

const closed = { additionalProperties: false } as const;
const time = (description = 'ISO 8601, UTC.') =>
  Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$', description });
const orNull = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const detail = orNull(
  Type.Union([
    Type.Object({}, { additionalProperties: true, description: "The row's JSON detail." }),
    Type.String({ description: 'A detail that is not JSON, as written.' }),
  ]),
);

export const AdminAuditEntry = Type.Object(
  {
    id: Type.Integer(),
    time: time(),
    event: Type.String({ description: 'e.g. `upload`, `login.failed`, `notify.retried`.' }),
    user: orNull(Type.String({ description: 'The account (or recipient address) the row is about.' })),
    actor: orNull(Type.String({ description: 'The account that acted, when it is not `user`.' })),
    remote: orNull(Type.String({ description: "The client's address." })),
    fileId: orNull(Type.Integer()),
    detail,
  },
  { ...closed, $id: 'AdminAuditEntry', title: 'Audit entry (admin)' },
);

export const AdminRecipient = Type.Object(
  {
    address: Type.String({ description: 'E-mail address or mobile number.' }),
    channel: Type.Union([Type.Literal('email'), Type.Literal('sms')]),
    status: Type.Union(
      ['pending', 'sent', 'failed', 'logged'].map((s) => Type.Literal(s)),
      {
        description: 'Of the last message announcing the file to this recipient.',
      },
    ),
    downloads: Type.Integer({ description: 'Complete downloads through their link.' }),
  },
  { ...closed, $id: 'AdminRecipient', title: 'Transfer recipient (admin)' },
);

export const AdminTransfer = Type.Object(
  {
    id: Type.Integer({ description: 'The file id.' }),
    name: orNull(Type.String()),
    size: orNull(Type.Integer({ description: 'Bytes.' })),
    sha256: orNull(Type.String({ pattern: '^[0-9a-f]{64}$' })),
    state: Type.Union([Type.Literal('area'), Type.Literal('backup'), Type.Literal('purged')]),
    owner: orNull(Type.String({ description: 'Whose area holds (held) the file.' })),
    sender: orNull(Type.String({ description: 'Who uploaded it.' })),
    created: orNull(time()),
    expires: orNull(time('When its links end (ISO 8601, UTC); null once purged.')),
    retired: orNull(time('When it moved to backup.')),
    purged: orNull(time('When its contents were deleted.')),
    recipients: Type.Array(Type.Ref('AdminRecipient')),
    downloads: Type.Integer({ description: 'Complete downloads, through any link.' }),
  },
  { ...closed, $id: 'AdminTransfer', title: 'Transfer (admin)' },
);

export const AdminTimelineEntry = Type.Object(
  {
    time: time(),
    source: Type.Union([Type.Literal('audit'), Type.Literal('outbox')]),
    event: Type.String({ description: "An audit event, or an outbox message's kind." }),
    detail,
    user: orNull(Type.String()),
    remote: orNull(Type.String()),
    channel: orNull(Type.String()),
    status: orNull(Type.String({ description: "An outbox message's status now." })),
    attempts: orNull(Type.Integer()),
    lastError: orNull(Type.String()),
  },
  { ...closed, $id: 'AdminTimelineEntry', title: 'Timeline entry (admin)' },
);

export const AdminOutboxMessage = Type.Object(
  {
    id: Type.Integer(),
    channel: Type.String({ description: '`email`, `sms` or `webhook`.' }),
    recipient: Type.String(),
    kind: Type.String({ description: 'e.g. `file-link`, `download-pin`, a webhook event type.' }),
    status: Type.Union(['pending', 'sent', 'failed', 'logged'].map((s) => Type.Literal(s))),
    attempts: Type.Integer(),
    created: time(),
    lastAttempt: orNull(time()),
    nextAttempt: orNull(time('When a pending message is tried next; null otherwise.')),
    sent: orNull(time()),
    lastError: orNull(Type.String()),
    fileId: orNull(Type.Integer()),
    user: orNull(Type.String()),
  },
  { ...closed, $id: 'AdminOutboxMessage', title: 'Outbox message (admin)' },
);

const counter = (description: string) => Type.Integer({ minimum: 0, description });

export const AdminStatsBucket = Type.Object(
  {
    start: time('Where the bucket begins (ISO 8601, UTC).'),
    uploads: counter('Files uploaded.'),
    uploadBytes: counter('Their bytes.'),
    downloads: counter('Download responses, complete or cut.'),
    downloadBytes: counter('Bytes they sent.'),
    senders: counter('Accounts that uploaded.'),
    recipients: counter('Recipient addresses that downloaded through their link.'),
    failedSignIns: counter('Refused passwords (`login.failed`).'),
    lockouts: counter('Accounts locked by failed sign-ins (`user.locked`).'),
    notificationFailures: counter('Messages given up (`notify.failed`).'),
  },
  { ...closed, $id: 'AdminStatsBucket', title: 'Statistics bucket (admin)' },
);

/** Registered beside src/platform/http/schemas.ts's COMPONENTS (app.ts, the tests' check). */
export const ADMIN_REPORT_SCHEMAS: TSchema[] = [
  AdminAuditEntry,
  AdminRecipient,
  AdminTransfer,
  AdminTimelineEntry,
  AdminOutboxMessage,
  AdminStatsBucket,
];

// What the console reads (type-only: nothing of these reaches its bundle).
export type AuditEntryBody = Static<typeof AdminAuditEntry>;
export type RecipientBody = Static<typeof AdminRecipient>;
export type TransferBody = Static<typeof AdminTransfer>;
export type TimelineEntryBody = Static<typeof AdminTimelineEntry>;
export type OutboxMessageBody = Static<typeof AdminOutboxMessage>;
export type StatsBucketBody = Static<typeof AdminStatsBucket>;
