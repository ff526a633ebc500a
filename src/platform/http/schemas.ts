// The response shapes of the API, written once: route schemas (and so openapi.json),
// the test suite's check of every response it sees, and the portal's API client types all come
// from here. They document and check; they never serialize: app.ts keeps JSON.stringify as the
// serializer, so the bytes on the wire stay exactly those of the presenters (interface.md).
// Every object is closed (additionalProperties: false), so a key added to a presenter without a
// schema fails the tests instead of drifting silently.
import { type Static, type TSchema, Type } from 'typebox';
import { STATUS_TEXT } from './http-error.js';

const closed = { additionalProperties: false } as const;

const GO_TIME_EXAMPLE = '2022-06-13 19:37:52.366591 -0300 -03 m=+25968.263316625';
const BASE = 'http://localhost:8080/v1';

const envelopeFields = {
  status: Type.Integer({ description: '0 on success; on error the HTTP status code.' }),
  description: Type.String({
    description: '`<handler>:succsessfully` (spelled as the interface spells it), or the status text.',
  }),
  apiver: Type.String({
    pattern: '^v1 \\(\\d+\\.\\d+\\.\\d+\\)$',
    description: '`v1 (<major.minor.patch>)`',
  }),
  time: Type.String({
    description:
      "Server time as Go's time.Time.String(): local time with microseconds, offset, zone and monotonic suffix.",
  }),
};

/** The fields of a success envelope of `handler` (a slice's routes compose their answers with it). */
export const success = (handler: string) => ({
  ...envelopeFields,
  status: Type.Literal(0),
  description: Type.Literal(`${handler}:succsessfully`),
});

const successUser = Type.String({ description: 'User name (the uploader, for link endpoints).' });

// For the response schemas of the slices (their schemas-*.ts files): closed objects, success envelopes.
export { closed, success as successFields };

/** Interface §2.2 on errors: the envelope with the status and its text, and maybe a safe `detail`. */
export const ErrorEnvelope = Type.Object(
  {
    ...envelopeFields,
    description: Type.Union(Object.values(STATUS_TEXT).map((s) => Type.Literal(s))),
    detail: Type.Optional(
      Type.String({ description: 'Safe explanation; never reveals whether a user exists.' }),
    ),
  },
  { ...closed, $id: 'ErrorEnvelope', title: 'Error envelope' },
);

export const RecipientStatus = Type.Object(
  {
    id: Type.Integer({
      description: "The recipient's link id (what `to` of /download/resend also accepts).",
    }),
    address: Type.String({ description: 'Masked e-mail address or mobile number.' }),
    channel: Type.Union([Type.Literal('email'), Type.Literal('sms')]),
    status: Type.Union([Type.Literal('pending'), Type.Literal('sent'), Type.Literal('failed')]),
    reason: Type.Union([Type.String(), Type.Null()]),
    attempts: Type.Integer(),
    lastAttempt: Type.Union([Type.Integer(), Type.Null()]),
    downloads: Type.Object(
      {
        count: Type.Integer(),
        complete: Type.Boolean(),
        first: Type.Union([Type.Integer(), Type.Null()]),
        last: Type.Union([Type.Integer(), Type.Null()]),
      },
      closed,
    ),
    revoked: Type.Boolean({ description: 'The sender revoked this link (POST /download/revoke).' }),
    expires: Type.Union([Type.Integer(), Type.Null()], {
      description: "The link's own end, ms since the epoch; null: the file's (PATCH /download/link).",
    }),
    maxDownloads: Type.Union([Type.Integer(), Type.Null()], {
      description: 'Complete downloads after which the link answers as expired; null: no limit.',
    }),
    completeDownloads: Type.Integer({
      description: 'Complete downloads through this link so far: what `maxDownloads` counts.',
    }),
  },
  { ...closed, $id: 'RecipientStatus', title: 'Recipient status (ext)' },
);

/** Interface §2.3, plus (ext) sha256, expires and, for announced files, recipients. */
export const FileEntry = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String(),
    length: Type.Integer({ description: 'Bytes.' }),
    modified: Type.Integer({ description: 'Milliseconds since the epoch (13 digits).' }),
    linkURL: Type.String({
      description: '`{base_url}/download/file?lang=<lang>&k=<token>` (backup: `/download/file/backup?…&z=`).',
    }),
    sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }),
    expires: Type.Integer({
      description: '(ext) When the link ends (area) or the file is purged (backup), ms since the epoch.',
    }),
    recipients: Type.Optional(Type.Array(Type.Ref('RecipientStatus'))),
    origin: Type.Optional(
      Type.Object(
        {
          request: Type.String({ description: 'The upload request the file arrived through.' }),
          from: Type.Union([Type.String(), Type.Null()], {
            description: 'The invited e-mail address or mobile number that sent it; null: its open link.',
          }),
        },
        {
          ...closed,
          description: '(ext) Where the file came from, when it arrived through an upload request.',
        },
      ),
    ),
  },
  { ...closed, $id: 'FileEntry', title: 'File entry' },
);

/** Interface §2.4: upload response and (ext) area lists. */
export const DownloadList = Type.Object(
  { ...success('handlerDownloadList'), user: successUser, files: Type.Array(Type.Ref('FileEntry')) },
  { ...closed, $id: 'DownloadList', title: 'Download list' },
);

/** Interface §2.5. */
export const LoginResult = Type.Object(
  { ...success('handlerAuthLogin'), user: successUser, bearer: Type.String() },
  { ...closed, $id: 'LoginResult', title: 'Login result' },
);

/** Interface §2.6. */
export const LinkResult = Type.Object(
  { ...success('handlerAuthForget'), user: successUser, linkURL: Type.String() },
  { ...closed, $id: 'LinkResult', title: 'Password-change link result' },
);

/** Interface §2.1. */
export const TokenResponse = Type.Object(
  {
    access_token: Type.String(),
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer({ description: 'Seconds.' }),
    scope: Type.String({ description: 'The service base address.' }),
  },
  { ...closed, $id: 'TokenResponse', title: 'Token response' },
);

/** Interface §2.7. */
export const OAuthError = Type.Object(
  {
    error: Type.Integer({ description: 'The HTTP status code.' }),
    error_description: Type.String(),
    error_uri: Type.String({ description: 'The service base address.' }),
  },
  { ...closed, $id: 'OAuthError', title: 'OAuth error object' },
);

export const Logout = Type.Object(
  { ...success('handlerAuthLogout'), user: successUser },
  { ...closed, $id: 'LogoutResult', title: 'Logout result (ext)' },
);

/** (ext) POST /download/pin. */
export const PinSent = Type.Object(
  { ...success('handlerDownloadList'), user: successUser },
  { ...closed, $id: 'PinSent', title: 'PIN sent (ext)' },
);

/** (ext) GET /download/info: what the landing page shows. */
export const LinkInfo = Type.Object(
  {
    ...success('handlerDownloadList'),
    user: successUser,
    file: Type.Object(
      {
        name: Type.String(),
        length: Type.Integer(),
        modified: Type.Integer(),
        sender: Type.String(),
        message: Type.String(),
        expires: Type.Integer(),
        secure: Type.Boolean({ description: 'Whether this link needs a PIN.' }),
        lang: Type.Union([Type.Literal('pt'), Type.Literal('en'), Type.Literal('es')]),
      },
      closed,
    ),
  },
  { ...closed, $id: 'LinkInfo', title: 'Link details (ext)' },
);

/** (ext) GET /download/status, POST /download/resend. */
export const DeliveryStatus = Type.Object(
  {
    ...success('handlerDownloadList'),
    user: Type.Optional(successUser),
    id: Type.Integer(),
    name: Type.String(),
    recipients: Type.Array(Type.Ref('RecipientStatus')),
  },
  { ...closed, $id: 'DeliveryStatus', title: 'Delivery status (ext)' },
);

const webhookFields = {
  id: Type.Integer(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  disabledReason: Type.Union([Type.String(), Type.Null()]),
  created: Type.String({ description: 'ISO 8601.' }),
};

export const Webhook = Type.Object(webhookFields, {
  ...closed,
  $id: 'Webhook',
  title: 'Webhook subscription (ext)',
});

export const WebhookList = Type.Object(
  { ...success('handlerWebhooks'), user: successUser, webhooks: Type.Array(Type.Ref('Webhook')) },
  { ...closed, $id: 'WebhookList', title: 'Webhook subscriptions (ext)' },
);

export const WebhookCreated = Type.Object(
  {
    ...success('handlerWebhooks'),
    user: successUser,
    webhook: Type.Object(
      { ...webhookFields, secret: Type.String({ description: 'The signing secret, shown this once.' }) },
      closed,
    ),
  },
  { ...closed, $id: 'WebhookCreated', title: 'Webhook added (ext)' },
);

export const WebhookRemoved = Type.Object(
  { ...success('handlerWebhooks'), user: successUser },
  { ...closed, $id: 'WebhookRemoved', title: 'Webhook removed (ext)' },
);

export const Health = Type.Object(success('handlerHealth'), {
  ...closed,
  $id: 'Health',
  title: 'Health (ext)',
});

export const Ready = Type.Object(
  {
    ...success('handlerHealth'),
    checks: Type.Object({ database: Type.Literal('ok'), storage: Type.Literal('ok') }, closed),
    outbox: Type.Optional(
      Type.Object(
        {
          pending: Type.Integer({ minimum: 0, description: 'Messages waiting to be delivered.' }),
          oldestPendingSeconds: Type.Integer({
            minimum: 0,
            description: 'Age of the oldest of them (0 when none): grows while a transport is down.',
          }),
        },
        closed,
      ),
    ),
  },
  { ...closed, $id: 'Ready', title: 'Readiness (ext)' },
);

/** Every named schema: registered with app.addSchema, they become components.schemas. */
export const COMPONENTS: TSchema[] = [
  ErrorEnvelope,
  RecipientStatus,
  FileEntry,
  DownloadList,
  LoginResult,
  LinkResult,
  TokenResponse,
  OAuthError,
  Logout,
  PinSent,
  LinkInfo,
  DeliveryStatus,
  Webhook,
  WebhookList,
  WebhookCreated,
  WebhookRemoved,
  Health,
  Ready,
];

export type ErrorEnvelopeBody = Static<typeof ErrorEnvelope>;
export type FileEntryBody = Static<typeof FileEntry>;
export type RecipientStatusBody = Static<typeof RecipientStatus>;
export type LinkInfoBody = Static<typeof LinkInfo>;

// ---- Route schema pieces -------------------------------------------------------------------

const ref = (id: string) => ({ $ref: id });

/** A JSON response of a named schema, with one example. */
export function json(id: string, description: string, example: unknown) {
  return { description, content: { 'application/json': { schema: ref(id), example } } };
}

/** A JSON response of a schema written in place (its parts may refer to named ones), with one example. */
export function jsonOf(schema: TSchema, description: string, example: unknown) {
  return { description, content: { 'application/json': { schema, example } } };
}

const time = GO_TIME_EXAMPLE;
const apiver = 'v1 (0.1.0)';
export const errorExample = (status: keyof typeof STATUS_TEXT, detail?: string) => ({
  status,
  description: STATUS_TEXT[status],
  apiver,
  time,
  ...(detail ? { detail } : {}),
});
export const successExample = (handler: string, user: string | null, extra: object = {}) => ({
  status: 0,
  description: `${handler}:succsessfully`,
  apiver,
  time,
  ...(user === null ? {} : { user }),
  ...extra,
});

/** The error envelopes of a route: the statuses it documents, and any other as `default`. */
export function errors(statuses: Partial<Record<keyof typeof STATUS_TEXT, string>>) {
  const out: Record<string, unknown> = {};
  for (const [code, why] of Object.entries(statuses)) {
    out[code] = json('ErrorEnvelope', why!, errorExample(Number(code) as keyof typeof STATUS_TEXT));
  }
  out['default'] = json(
    'ErrorEnvelope',
    'Any other error (404, 405, 408, 413, 429, 503…): the error envelope.',
    errorExample(500),
  );
  return out;
}

export const fileEntryExample = {
  id: 1,
  name: 'report.pdf',
  length: 52341,
  modified: 1655159872366,
  linkURL: `${BASE}/download/file?lang=pt&k=Qx3v…`,
  sha256: 'a'.repeat(64),
  expires: 1655764672366,
};

/** The interface's `Content_type` request header (accepted as an alias of Content-Type). */
export const contentTypeHeader = (value: string) =>
  Type.Object({
    Content_type: Type.Optional(
      Type.String({
        description: `Written as the interface writes it; an alias of Content-Type. Value: \`${value}\`.`,
      }),
    ),
  });

type Security = { [scheme: string]: string[] }[];
export const BASIC: Security = [{ basic: [] }];
export const BEARER: Security = [{ bearer: [] }];
export const BASIC_OR_BEARER: Security = [{ basic: [] }, { bearer: [] }];
export const EXAMPLE_BASE = BASE;
