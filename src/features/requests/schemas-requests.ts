// The shapes of the upload-request routes (docs/requests.md): the requester's at {base}/requests,
// the outsider's page at {base}/requests/open, and the admin API's at {base}/admin/requests.
// Components of openapi.json; the tests check every answer against them.
import { type Static, Type } from 'typebox';
import { closed, successFields } from '../../platform/http/schemas.js';
import { MAX_INVITES, MAX_REQUEST_FILES, MESSAGE_MAX, TITLE_MAX } from './request-limits.js';

export const REQUESTS_HANDLER = 'handlerRequests';
export const ADMIN_REQUESTS_HANDLER = 'handlerAdminRequests';

const iso = (description: string) => Type.String({ description: `${description} ISO 8601 UTC.` });
const count = (description: string) => Type.Integer({ minimum: 0, description });
const limits = Type.Object(
  {
    maxFiles: count('Files it takes at most.'),
    maxFileBytes: count('Bytes per file at most.'),
    maxTotalBytes: count('Bytes in all at most.'),
  },
  closed,
);
const amounts = (what: string) =>
  Type.Object({ files: count(`Files ${what}.`), bytes: count(`Bytes ${what}.`) }, closed);

const requestFields = {
  id: Type.String({ description: 'The request id (16 hex digits).' }),
  title: Type.String(),
  message: Type.String(),
  user: Type.String({ description: 'The requester.' }),
  area: Type.String({ description: 'The account whose area the files land in.' }),
  created: iso('When it was made.'),
  expires: iso('When it stops taking files.'),
  reusable: Type.Boolean({ description: 'false: it closes when its first batch completes.' }),
  state: Type.Union([Type.Literal('open'), Type.Literal('closed'), Type.Literal('expired')]),
  closed: Type.Union([iso('When it was closed.'), Type.Null()]),
  closedReason: Type.Union(
    [Type.Literal('closed'), Type.Literal('admin'), Type.Literal('batch'), Type.Literal('full'), Type.Null()],
    { description: 'closed: by its requester; admin; batch: its first batch (one use); full: its limits.' },
  ),
  limits,
  received: amounts('stored'),
  left: amounts('it may still take (its limits less what uploads under way and stored reserve)'),
  links: Type.Array(
    Type.Object(
      {
        to: Type.Union([Type.String(), Type.Null()], {
          description: 'The invited address; null: the open link.',
        }),
        url: Type.String({ description: 'The page an outsider opens: `<portal>request?t=<token>`.' }),
      },
      closed,
    ),
  ),
};

export const UploadRequest = Type.Object(requestFields, {
  ...closed,
  $id: 'UploadRequest',
  title: 'Upload request (ext)',
});

const arrived = Type.Object(
  {
    id: Type.Integer({ description: 'The file id.' }),
    name: Type.String(),
    length: count('Bytes.'),
    from: Type.Union([Type.String(), Type.Null()], { description: 'Who sent it; null: the open link.' }),
    time: iso('When it arrived.'),
  },
  closed,
);

/** (For the portal, type-only.) */
export type UploadRequestBody = Static<typeof UploadRequest>;
export type ArrivedFileBody = Static<typeof arrived>;

const envelope = (handler: string) => ({ ...successFields(handler), user: Type.String() });

export const REQUEST_SCHEMAS = [
  UploadRequest,
  Type.Object(
    { ...envelope(REQUESTS_HANDLER), request: Type.Ref('UploadRequest') },
    { ...closed, $id: 'RequestAnswer', title: 'Upload request (ext)' },
  ),
  Type.Object(
    {
      ...envelope(REQUESTS_HANDLER),
      request: Type.Object({ ...requestFields, files: Type.Array(arrived) }, closed),
    },
    { ...closed, $id: 'RequestDetail', title: 'Upload request with what arrived (ext)' },
  ),
  Type.Object(
    { ...envelope(REQUESTS_HANDLER), requests: Type.Array(Type.Ref('UploadRequest')) },
    { ...closed, $id: 'RequestList', title: 'Upload requests (ext)' },
  ),
  Type.Object(
    { ...envelope(ADMIN_REQUESTS_HANDLER), requests: Type.Array(Type.Ref('UploadRequest')) },
    { ...closed, $id: 'AdminRequestList', title: 'Upload requests (admin)' },
  ),
  Type.Object(
    { ...envelope(ADMIN_REQUESTS_HANDLER), request: Type.Ref('UploadRequest') },
    { ...closed, $id: 'AdminRequestAnswer', title: 'Upload request (admin)' },
  ),
  Type.Object(
    {
      ...successFields(REQUESTS_HANDLER),
      request: Type.Object(
        {
          title: Type.String(),
          message: Type.String(),
          requester: Type.String(),
          expires: iso('When it stops taking files.'),
          limits,
          left: amounts('it may still take'),
          pin: Type.Boolean({ description: 'true: an invited link; uploads need the PIN sent to it.' }),
          lang: Type.Union([Type.Literal('pt'), Type.Literal('en'), Type.Literal('es')]),
        },
        closed,
      ),
    },
    { ...closed, $id: 'RequestPage', title: "An upload request's page (ext)" },
  ),
  Type.Object(
    { ...successFields(REQUESTS_HANDLER) },
    { ...closed, $id: 'RequestPinSent', title: 'Request PIN sent (ext)' },
  ),
];

export const requestExample = {
  id: '5c1e9a03d7b24f68',
  title: 'Your 2024 invoices',
  message: 'Please send the invoices of 2024.',
  user: 'alice',
  area: 'alice',
  created: '2025-01-01T12:00:00.000Z',
  expires: '2025-01-15T12:00:00.000Z',
  reusable: false,
  state: 'open',
  closed: null,
  closedReason: null,
  limits: { maxFiles: 10, maxFileBytes: 104857600, maxTotalBytes: 524288000 },
  received: { files: 1, bytes: 52341 },
  left: { files: 9, bytes: 524235659 },
  links: [{ to: 'bob@example.com', url: 'http://localhost:8080/request?t=Qm9i…' }],
};

export const pageExample = {
  title: requestExample.title,
  message: requestExample.message,
  requester: 'alice',
  expires: requestExample.expires,
  limits: requestExample.limits,
  left: requestExample.left,
  pin: true,
  lang: 'pt',
};

/** POST {base}/requests: the body; the service checks values (request-spec.ts). */
export const NewRequestBody = Type.Object(
  {
    title: Type.String({ maxLength: TITLE_MAX * 2 }),
    message: Type.Optional(Type.String({ maxLength: MESSAGE_MAX * 2 })),
    emails: Type.Optional(Type.Array(Type.String({ maxLength: 254 }), { maxItems: MAX_INVITES })),
    mobiles: Type.Optional(Type.Array(Type.String({ maxLength: 32 }), { maxItems: MAX_INVITES })),
    maxFiles: Type.Optional(Type.Integer({ description: `1–${MAX_REQUEST_FILES}; default 10.` })),
    maxFileBytes: Type.Optional(Type.Integer({ description: 'Default and at most: REMESSA_MAX_FILE_SIZE.' })),
    maxTotalBytes: Type.Optional(Type.Integer({ description: 'Default: maxFiles × maxFileBytes.' })),
    expires: Type.Optional(
      Type.String({ maxLength: 40, description: 'ISO 8601; default: REMESSA_LINK_DAYS from now.' }),
    ),
    reusable: Type.Optional(Type.Boolean({ description: 'Default false: one batch, then closed.' })),
    d: Type.Optional(
      Type.String({ maxLength: 64, description: "Another user's area to fill (as POST /upload's d)." }),
    ),
  },
  { additionalProperties: false },
);

export const RequestIdParams = Type.Object({ id: Type.String({ pattern: '^[0-9a-f]{16}$' }) });
export const RequestTokenQuery = Type.Object({
  t: Type.Optional(Type.String({ maxLength: 512 })),
  lang: Type.Optional(Type.String({ maxLength: 8 })),
});
