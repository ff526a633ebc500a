// What the router hands every page.
export interface PageContext {
  main: HTMLElement;
  /** Re-renders the current page (after a language change or a session change). */
  refresh(): void;
  /** Goes to a hash route, e.g. '#/send'. */
  go(hash: string): void;
  /** A one-off message for this page (e.g. "you have signed out"), or null. */
  flash: string | null;
}
