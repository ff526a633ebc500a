// The response shapes of the API-key routes (docs/api-keys.md): a user's own at {base}/keys and
// the admin API's at {base}/admin/keys. Components of openapi.json; the tests check every answer.
import { type Static, Type } from 'typebox';
import { closed, successFields } from '../../platform/http/schemas.js';
import { SCOPES } from './api-keys.js';

export const KEYS_HANDLER = 'handlerKeys';
export const ADMIN_KEYS_HANDLER = 'handlerAdminKeys';

const iso = (description: string) => Type.String({ description: `${description} ISO 8601 UTC.` });
const nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

const keyFields = {
  id: Type.String({ description: 'The key id (16 hex digits), also the start of the key.' }),
  name: Type.String(),
  user: Type.String({ description: 'The account the key acts for.' }),
  scopes: Type.Union([Type.Array(Type.Union(SCOPES.map((s) => Type.Literal(s)))), Type.Null()], {
    description: "null: the owner's rights.",
  }),
  created: iso('When it was made.'),
  expires: nullable(iso('When it stops; null: never.')),
  lastUsed: nullable(iso('Its last use, to the minute; null: never used.')),
  revoked: nullable(iso('When it was revoked; null: it works.')),
};

export const ApiKey = Type.Object(keyFields, { ...closed, $id: 'ApiKey', title: 'API key (ext)' });

const createdKey = Type.Object(
  { ...keyFields, key: Type.String({ description: 'The key itself, shown this once.' }) },
  closed,
);

/** A key as the API lists it, and as it answers a new one (the portal reads these). */
export type ApiKeyBody = Static<typeof ApiKey>;
export type CreatedKeyBody = Static<typeof createdKey>;

function shapes(handler: string, prefix: string, actingIs: string) {
  const envelope = { ...successFields(handler), user: Type.String({ description: actingIs }) };
  return [
    Type.Object(
      { ...envelope, keys: Type.Array(Type.Ref('ApiKey')) },
      { ...closed, $id: `${prefix}KeyList`, title: `API keys (${prefix ? 'admin' : 'ext'})` },
    ),
    Type.Object(
      { ...envelope, apiKey: createdKey },
      { ...closed, $id: `${prefix}KeyCreated`, title: `API key made (${prefix ? 'admin' : 'ext'})` },
    ),
    Type.Object(
      { ...envelope, apiKey: Type.Ref('ApiKey') },
      { ...closed, $id: `${prefix}KeyRevoked`, title: `API key revoked (${prefix ? 'admin' : 'ext'})` },
    ),
  ];
}

/** The named schemas of both key APIs: components of openapi.json. */
export const KEY_SCHEMAS = [
  ApiKey,
  ...shapes(KEYS_HANDLER, '', 'The signed-in account.'),
  ...shapes(ADMIN_KEYS_HANDLER, 'Admin', 'The acting account.'),
];

export const keyExample = {
  id: '3f9c0a7d51e2b486',
  name: 'erp nightly export',
  user: 'alice',
  scopes: ['upload'],
  created: '2025-01-01T12:00:00.000Z',
  expires: '2026-01-01T00:00:00.000Z',
  lastUsed: '2025-01-02T08:30:00.000Z',
  revoked: null,
};
export const createdExample = {
  ...keyExample,
  lastUsed: null,
  key: 'rmk_3f9c0a7d51e2b486_2sVq3QvHq0mY5bXo7V1n8tD4fJ9kR6wZcA0eL3uPiGh',
};

/** A new key's fields from a request body: `scopes` as a list or one comma-separated string. */
export const NewKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    expires: Type.Optional(
      Type.String({ maxLength: 40, description: 'ISO 8601 date or time, or a count like 30d or 12h.' }),
    ),
    scopes: Type.Optional(
      Type.Union([
        Type.String({ maxLength: 200 }),
        Type.Array(Type.String({ maxLength: 20 }), { maxItems: SCOPES.length }),
      ]),
    ),
  },
  { additionalProperties: false },
);

export const KeyIdParams = Type.Object({ id: Type.String({ pattern: '^[0-9a-f]{16}$' }) });
