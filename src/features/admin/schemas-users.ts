// The response shapes of the admin API's users routes (docs/admin.md, "Users"): components of
// openapi.json (platform/http/app.ts adds them) and what the tests check every answer against.
// Every envelope's `user` is the acting account; the account an answer is about is `account`.
import { type Static, Type } from 'typebox';
import { closed, successFields } from '../../platform/http/schemas.js';

export const ADMIN_USERS_HANDLER = 'handlerAdminUsers';

const acting = Type.String({ description: 'The acting account.' });
const isoTime = (description: string) => Type.String({ description: `${description} ISO 8601 UTC.` });
const nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

const summaryFields = {
  name: Type.String(),
  email: nullable(Type.String()),
  mobile: nullable(Type.String()),
  lang: Type.String({ description: 'pt, en or es.' }),
  role: Type.Union([Type.Literal('user'), Type.Literal('auditor'), Type.Literal('admin')]),
  enabled: Type.Boolean(),
  locked: Type.Boolean({ description: 'A sign-in lockout or a password-recovery lockout is in force.' }),
  lockedUntil: nullable(isoTime('When the later of the lockouts ends; null when not locked.')),
  firstAccess: Type.Boolean({ description: 'No password yet: the account signs in after first access.' }),
  created: isoTime('When the account was created.'),
  lastSignIn: nullable(isoTime('The last token issued (token endpoint or login); null before.')),
};

export const UserSummary = Type.Object(summaryFields, {
  ...closed,
  $id: 'UserSummary',
  title: 'Account (admin)',
});

const bytes = (what: string) => Type.Integer({ minimum: 0, description: what });

export const UserDetail = Type.Object(
  {
    ...summaryFields,
    usage: Type.Object(
      {
        areaFiles: bytes('Files in its area.'),
        areaBytes: bytes('Their bytes.'),
        backupFiles: bytes('Files in its backup area.'),
        backupBytes: bytes('Their bytes.'),
        bytes: bytes(
          'Its usage counter: the bytes of all its files, counted with each one stored or removed.',
        ),
        quota: Type.Union([bytes('Bytes it may hold in area and backup (docs/quotas.md).'), Type.Null()], {
          description: 'Its quota, or REMESSA_QUOTA_DEFAULT; null: no limit.',
        }),
        maxFileSize: bytes('Its largest file: its own, or REMESSA_MAX_FILE_SIZE (never above).'),
      },
      closed,
    ),
  },
  { ...closed, $id: 'UserDetail', title: 'Account with its usage (admin)' },
);

const envelope = { ...successFields(ADMIN_USERS_HANDLER), user: acting };

export const AdminUserList = Type.Object(
  {
    ...envelope,
    users: Type.Array(Type.Ref('UserSummary')),
    next: nullable(Type.String({ description: 'The `cursor` of the next page.' })),
  },
  { ...closed, $id: 'AdminUserList', title: 'Accounts, a page (admin)' },
);

export const AdminUser = Type.Object(
  { ...envelope, account: Type.Ref('UserDetail') },
  { ...closed, $id: 'AdminUser', title: 'One account (admin)' },
);

export const AdminUserChanged = Type.Object(
  { ...envelope, account: Type.Ref('UserSummary') },
  { ...closed, $id: 'AdminUserChanged', title: 'An account as changed (admin)' },
);

export const AdminPasswordResetSent = Type.Object(
  { ...envelope, sent: Type.Literal(true) },
  { ...closed, $id: 'AdminPasswordResetSent', title: 'Password-reset e-mail queued (admin)' },
);

export const AdminUserRemoved = Type.Object(
  { ...envelope, removed: Type.String({ description: 'The name of the removed account.' }) },
  { ...closed, $id: 'AdminUserRemoved', title: 'Account removed (admin)' },
);

/** The named schemas of the users routes: components of openapi.json. */
export const ADMIN_USER_SCHEMAS = [
  UserSummary,
  UserDetail,
  AdminUserList,
  AdminUser,
  AdminUserChanged,
  AdminPasswordResetSent,
  AdminUserRemoved,
];

// What the console reads (type-only).
export type UserSummaryBody = Static<typeof UserSummary>;
export type UserDetailBody = Static<typeof UserDetail>;
