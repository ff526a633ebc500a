// API keys (#/keys): the signed-in account's keys (GET {base}/keys) with Revoke (DELETE
// {base}/keys/{id}), and a form that makes one (POST {base}/keys) and shows it once. The scopes
// offered follow the account's role ({portal}portal/me); a role it does not know gets the ones
// every account has.
import { type ApiKey, type CreatedApiKey, call, portalMe } from '../api.js';
import { h, nextId, notice, pageHeading, put, swap } from '../dom.js';
import { t } from '../i18n.js';
import type { PageContext } from '../page-context.js';
import { keyForm, keyList, scopesFor } from './key-parts.js';

export function renderKeys(ctx: PageContext): void {
  const status = h('div', { class: 'status-slot' });
  const list = keyList({
    owner: 'self',
    status,
    load: async () => (await call<{ keys?: ApiKey[] }>('/keys', { auth: 'bearer' })).keys ?? [],
    revoke: (id) => call(`/keys/${encodeURIComponent(id)}`, { method: 'DELETE', auth: 'bearer' }),
  });
  const formSlot = h('div', {}, h('p', { role: 'status' }, t('loading')));
  const listHeading = nextId('keys');
  put(
    ctx.main,
    pageHeading(t('keysTitle')),
    ctx.flash ? notice('info', ctx.flash) : null,
    h('p', {}, t('keysIntro')),
    h(
      'section',
      { class: 'card', 'aria-labelledby': listHeading },
      h('h2', { id: listHeading }, t('yourKeys')),
      status,
      list.element,
    ),
    formSlot,
  );
  portalMe().then((me) =>
    swap(
      formSlot,
      keyForm({
        owner: 'self',
        heading: t('newKey'),
        scopes: scopesFor(me?.role),
        create: async (body) =>
          (await call<{ apiKey: CreatedApiKey }>('/keys', { method: 'POST', auth: 'bearer', json: body }))
            .apiKey,
        created: list.reload,
      }),
    ),
  );
}
