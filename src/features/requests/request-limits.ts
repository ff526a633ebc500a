// The bounds of a request's fields. No imports: the schemas and the portal bundle take them too.

/** The longest a request stays open. */
export const MAX_REQUEST_DAYS = 365;
export const MAX_REQUEST_FILES = 10_000;
export const MAX_INVITES = 50;
export const TITLE_MAX = 200;
export const MESSAGE_MAX = 2000;
