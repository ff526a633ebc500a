// Upload requests in the console (#/requests): every account's requests (GET {base}/admin/requests),
// each with its requester, state and what arrived; an admin closes any (POST
// {base}/admin/requests/{id}/close, audited with the admin's name), an auditor only reads.
import type { UploadRequest } from '../../api.js';
import { h, put } from '../../dom.js';
import { t } from '../../i18n.js';
import { requestList } from '../request-parts.js';
import { admin } from './admin-api.js';
import { type AdminPage, canChange, pageTop } from './admin-page.js';

export function renderRequests(page: AdminPage): void {
  const status = h('div', { class: 'status-slot' });
  const list = requestList({
    status,
    showRequester: true,
    load: async () => (await admin<{ requests?: UploadRequest[] }>('/requests')).requests ?? [],
    ...(canChange(page)
      ? { close: (id: string) => admin(`/requests/${encodeURIComponent(id)}/close`, { method: 'POST' }) }
      : {}),
  });
  put(page.ctx.main, ...pageTop(page, t('requestsTitle')), status, list.element);
}
