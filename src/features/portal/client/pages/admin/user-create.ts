// New user: POST {base}/admin/users without a password, so the account starts in first access and
// is e-mailed the first-access message at once (the e-mail address is required for that).
import { ApiError, errorText } from '../../api.js';
import { field, h, notice, put, say } from '../../dom.js';
import { LANG_NAMES, LANGS, type Lang, t } from '../../i18n.js';
import { admin, ROLES } from './admin-api.js';
import { type AdminPage, canChange, carryNotice, pageTop } from './admin-page.js';
import { ROLE_LABEL, userHref } from './users.js';

export function langSelect(selected: string): HTMLSelectElement {
  return h(
    'select',
    { name: 'lang' },
    LANGS.map((l: Lang) => h('option', { value: l, lang: l, selected: l === selected }, LANG_NAMES[l])),
  );
}

export function roleSelect(selected: string): HTMLSelectElement {
  return h(
    'select',
    { name: 'role' },
    ROLES.map((r) => h('option', { value: r, selected: r === selected }, t(ROLE_LABEL[r]))),
  );
}

export function renderUserCreate(page: AdminPage): void {
  put(page.ctx.main, pageTop(page, t('createUser')));
  if (!canChange(page)) {
    put(page.ctx.main, notice('error', t('errForbidden')));
    return;
  }
  const name = h('input', {
    name: 'name',
    autocomplete: 'off',
    autocapitalize: 'none',
    spellcheck: 'false',
    maxlength: 64,
    required: true,
  });
  const email = h('input', {
    name: 'email',
    type: 'email',
    autocomplete: 'off',
    maxlength: 254,
    required: true,
  });
  const mobile = h('input', { name: 'mobile', type: 'tel', autocomplete: 'off', maxlength: 20 });
  const lang = langSelect('pt');
  const role = roleSelect('user');
  const status = h('div', { class: 'status-slot' });
  const submit = h('button', { type: 'submit' }, t('createUser'));
  const create = async (e: Event) => {
    e.preventDefault();
    const n = name.value.trim();
    const m = email.value.trim();
    if (!n || !m) {
      say(status, 'error', t(n ? 'emailNeeded' : 'nameNeeded'));
      (n ? email : name).focus();
      return;
    }
    submit.disabled = true;
    try {
      const body = {
        name: n,
        email: m,
        mobile: mobile.value.trim() || undefined,
        lang: lang.value,
        role: role.value,
      };
      await admin('/users', { method: 'POST', json: body });
      carryNotice(t('userCreated', { name: n }));
      page.ctx.go(userHref(n));
    } catch (err) {
      say(status, 'error', err instanceof ApiError && err.status === 409 ? t('userExists') : errorText(err));
      submit.disabled = false;
    }
  };
  put(
    page.ctx.main,
    h(
      'form',
      { class: 'card narrow', novalidate: true, onsubmit: create },
      h('p', {}, t('createUserIntro')),
      field(t('username'), name),
      field(t('email'), email),
      field(t('mobile'), mobile, t('mobileHint')),
      field(t('language'), lang),
      field(t('role'), role),
      status,
      h(
        'div',
        { class: 'actions' },
        submit,
        h('a', { class: 'button secondary', href: '#/users' }, t('cancel')),
      ),
    ),
  );
}
