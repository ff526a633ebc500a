// An account's API keys on its page in the console: GET {base}/admin/keys?user=NAME. An admin
// also revokes one (DELETE {base}/admin/keys/{id}) and makes one for the account (POST
// {base}/admin/users/{name}/keys), shown once; an auditor reads the list without buttons.
import type { ApiKey, CreatedApiKey } from '../../api.js';
import { h } from '../../dom.js';
import { t } from '../../i18n.js';
import { keyForm, keyList, scopesFor } from '../key-parts.js';
import { admin, type UserDetail } from './admin-api.js';
import { type AdminPage, canChange } from './admin-page.js';

export function userKeys(page: AdminPage, u: UserDetail): HTMLElement[] {
  const changes = canChange(page);
  const status = h('div', { class: 'status-slot' });
  const list = keyList({
    owner: 'account',
    status,
    load: async () => (await admin<{ keys?: ApiKey[] }>('/keys', { query: { user: u.name } })).keys ?? [],
    ...(changes
      ? { revoke: (id: string) => admin(`/keys/${encodeURIComponent(id)}`, { method: 'DELETE' }) }
      : {}),
  });
  const section = h(
    'section',
    { class: 'card', 'aria-labelledby': 'account-keys' },
    h('h2', { id: 'account-keys' }, t('keysTitle')),
    status,
    list.element,
  );
  if (!changes) return [section];
  const form = keyForm({
    owner: 'account',
    heading: t('createKeyFor'),
    scopes: scopesFor(u.role),
    create: async (body) =>
      (
        await admin<{ apiKey: CreatedApiKey }>(`/users/${encodeURIComponent(u.name)}/keys`, {
          method: 'POST',
          json: body,
        })
      ).apiKey,
    created: list.reload,
  });
  return [section, form];
}
