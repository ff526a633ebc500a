// The reason delivery tracking gives for a message that was only written to the server log (no
// SMTP or SMS settings): one copy for the server, which reports it, and the portal, which shows it
// as "registered, not sent" rather than as a failure. No imports, so the portal bundle can take it.

export function loggedReason(channel: string): string {
  return `not sent: no ${channel === 'email' ? 'e-mail' : 'SMS'} transport is configured (written to the server log)`;
}

export function isLoggedReason(reason: string | null | undefined): boolean {
  return typeof reason === 'string' && /^not sent: no (e-mail|SMS) transport is configured\b/.test(reason);
}
