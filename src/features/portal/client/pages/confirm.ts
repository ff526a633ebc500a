// The one confirmation of something that cannot be undone (revoke a key, close a request, delete a
// file, remove an account): the question, a danger button and Cancel, in a slot of the page.
import { errorText } from '../api.js';
import { h, say, swap } from '../dom.js';
import { t } from '../i18n.js';

export interface Confirmation {
  /** The group's accessible name. */
  label: string;
  question: string;
  /** The danger button's words. */
  yes: string;
  /** Runs on Yes, the button held meanwhile; what follows success is its own business. */
  act: () => Promise<void>;
  /** Where a failure is said. */
  status: Element;
  /** Gets the focus back on Cancel. */
  back?: HTMLElement;
  /** How a failure is worded (default: the API's words). */
  errorWords?: (err: unknown) => string;
}

/** Shows `c` in `slot` with the focus on Yes; Cancel empties the slot. */
export function confirmInSlot(slot: HTMLElement, c: Confirmation): void {
  const yes = h('button', { type: 'button', class: 'danger' }, c.yes);
  const no = h('button', { type: 'button', class: 'secondary' }, t('cancel'));
  no.addEventListener('click', () => {
    swap(slot);
    c.back?.focus();
  });
  yes.addEventListener('click', () => {
    yes.disabled = true;
    c.act().catch((err: unknown) => {
      yes.disabled = false;
      say(c.status, 'error', (c.errorWords ?? errorText)(err));
    });
  });
  swap(
    slot,
    h(
      'div',
      { class: 'confirm', role: 'group', 'aria-label': c.label },
      h('p', {}, c.question),
      h('div', { class: 'actions' }, yes, no),
    ),
  );
  yes.focus();
}
