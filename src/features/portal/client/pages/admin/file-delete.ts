// An admin deletes a file now (DELETE {base}/admin/files/{id}), from the transfers list or a file's
// timeline, after a confirmation; an auditor gets no button. The page is drawn again with what
// happened at its top (a deleted file leaves the list: it has no purge row).

import { h } from '../../dom.js';
import { t } from '../../i18n.js';
import { confirmInSlot } from '../confirm.js';
import { admin, type Transfer } from './admin-api.js';
import { type AdminPage, canChange, carryNotice } from './admin-page.js';

export const fileLabelOf = (f: Transfer) => f.name ?? t('fileN', { id: f.id });

export interface DeleteSlots {
  /** where the confirmation opens */
  confirm: HTMLElement;
  /** where an error is said */
  status: HTMLElement;
}

function confirmDelete(page: AdminPage, f: Transfer, slots: DeleteSlots, opener: HTMLElement, after: string) {
  const name = fileLabelOf(f);
  confirmInSlot(slots.confirm, {
    label: t('deleteNow'),
    question: t('adminDeleteConfirm', { name, owner: f.owner ?? t('none') }),
    yes: t('deleteNow'),
    status: slots.status,
    back: opener,
    act: async () => {
      await admin(`/files/${f.id}`, { method: 'DELETE' });
      carryNotice(t('fileDeleted', { name }));
      page.ctx.go(after);
    },
  });
}

/**
 * The Delete button of a file an admin may still delete (in the area or the backup), else null.
 * `after`: the hash route drawn once it is deleted.
 */
export function deleteButton(
  page: AdminPage,
  f: Transfer,
  slots: DeleteSlots,
  after: string,
): HTMLElement | null {
  if (!canChange(page) || f.state === 'purged') return null;
  const button: HTMLButtonElement = h(
    'button',
    {
      type: 'button',
      class: 'danger small',
      'aria-label': t('deleteFileOf', { name: fileLabelOf(f) }),
      onclick: () => confirmDelete(page, f, slots, button, after),
    },
    t('deleteFile'),
  );
  return button;
}
