// The account's usage and quota under the lists' headings ("Using 1.2 GiB of 10 GiB"), from
// {portal}portal/me; nothing when the server does not say (docs/quotas.md).
import { portalMe } from '../api.js';
import { h } from '../dom.js';
import { formatSize } from '../format.js';
import { t } from '../i18n.js';

export function usageLine(): HTMLElement {
  const line = h('p', { class: 'usage' });
  void portalMe().then((me) => {
    const used = me?.usage?.bytes;
    const quota = me?.usage?.quota;
    if (typeof used !== 'number') return;
    line.textContent =
      typeof quota === 'number'
        ? t('usageOfQuota', { used: formatSize(used), quota: formatSize(quota) })
        : t('usageNoQuota', { used: formatSize(used) });
  });
  return line;
}
