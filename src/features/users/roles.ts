// What an account may do beyond its own files. Read from the account row on every request, so a
// demotion takes effect at once on every instance.
// - user: today's behaviour: its own area, links and webhooks.
// - auditor: reads every admin report (users, audit, transfers, outbox, statistics); changes
//   nothing and never reads file contents.
// - admin: everything an auditor reads, and every change.
export const ROLES = ['user', 'auditor', 'admin'] as const;
export type Role = (typeof ROLES)[number];

export const isRole = (value: unknown): value is Role => ROLES.includes(value as Role);

/** The role of a row; anything unknown is the least privileged. */
export const roleOf = (row: { role: string }): Role => (isRole(row.role) ? row.role : 'user');

/** May read the admin reports. */
export const canAudit = (role: Role) => role === 'auditor' || role === 'admin';

/** May change users, retry messages, close anything. */
export const canAdminister = (role: Role) => role === 'admin';
