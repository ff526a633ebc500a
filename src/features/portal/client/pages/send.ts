// Send: choose or drop files, optional destination user / recipients / message, one upload request
// per file with its own progress bar, speed and cancel button; each result link has a copy button
// (the rows: send-rows.ts).
// Upload state lives at module level so a language switch or navigation does not lose it.

import { UPLOAD_PARAMETER_MAX_LENGTH } from '../../../files/upload-limits.js';
import { isEmail, listItems, normalizeMobile, USER_NAME } from '../../../users/validation-rules.js';
import { ApiError, errorText, interruptedUploads, type UploadParams, uploadFile } from '../api.js';
import { field, h, nextId, notice, pageHeading, put, say } from '../dom.js';
import { t } from '../i18n.js';
import type { PageContext } from '../page-context.js';
import { touch } from '../session.js';
import { type Upload, uploadRow } from './send-rows.js';

const PARALLEL = 2;
const uploads: Upload[] = [];
let chosen: File[] = [];
/** Set while the Send page is on screen: empties the file input and the chosen-files line. */
let clearChosen: () => void = () => {
  chosen = [];
};

/** The first field the browser can already tell is wrong, with its message (rules of the server). */
function invalidField(params: UploadParams): { field: 'd' | 'm' | 'c'; message: string } | null {
  for (const item of listItems(params.m ?? '')) {
    if (!isEmail(item)) return { field: 'm', message: t('errEmails', { value: item }) };
  }
  for (const item of listItems(params.c ?? '')) {
    if (!normalizeMobile(item)) return { field: 'c', message: t('errMobiles', { value: item }) };
  }
  if (params.d && !USER_NAME.test(params.d))
    return { field: 'd', message: t('errDestination', { value: params.d }) };
  return null;
}
const draft = { d: '', m: '', c: '', i: '' };
/** Set while the Send page is on screen: shows the draft in the fields again. */
let showDraft: () => void = () => {};

/**
 * After every file of a Send is stored, its destination, recipients and message are done with: a
 * next Send must not announce to the same people again. A field changed since keeps its new text.
 */
function clearSentFields(params: UploadParams): void {
  for (const key of ['d', 'm', 'c', 'i'] as const)
    if (draft[key].trim() === (params[key] ?? '')) draft[key] = '';
  showDraft();
}

function pump(): void {
  while (uploads.filter((u) => u.state === 'uploading').length < PARALLEL) {
    const next = uploads.find((u) => u.state === 'waiting');
    if (!next) return;
    start(next);
  }
}

function start(u: Upload): void {
  u.state = 'uploading';
  u.startedAt = performance.now();
  u.handle = uploadFile(u.file, u.params, (loaded) => {
    u.loaded = loaded;
    const seconds = (performance.now() - u.startedAt) / 1000;
    u.speed = seconds > 0 ? loaded / seconds : 0;
    touch();
    u.redraw();
  });
  u.handle.done
    .then(
      (files) => {
        u.state = 'done';
        u.loaded = u.file.size;
        u.links = files;
      },
      (err: unknown) => {
        // The bar went to 100% while the body was sent; nothing was stored.
        u.loaded = 0;
        if (err instanceof DOMException && err.name === 'AbortError') u.state = 'cancelled';
        else {
          u.state = 'failed';
          u.error = err instanceof ApiError && err.status === 401 ? t('sessionExpired') : errorText(err);
          if (err instanceof ApiError && err.status === 400) u.error += ` ${t('errUploadKept')}`;
        }
      },
    )
    .finally(() => {
      u.handle = null;
      // The files of a batch stay chosen until every one of them is sent, so a failed send can
      // be corrected and sent again without choosing them again.
      const batchDone = uploads.filter((x) => x.batch === u.batch).every((x) => x.state === 'done');
      if (batchDone && u.batch === chosen) clearChosen();
      if (batchDone) clearSentFields(u.params);
      u.redraw();
      pump();
    });
}

/** The file input and the drop zone around it; `showChosen` writes which files are chosen. */
function filePicker(): { input: HTMLInputElement; drop: HTMLElement; showChosen: () => void } {
  // The native picker's button speaks the browser's language, not the page's: it is visually
  // hidden (still focusable) and a translated label styled as a button opens it.
  const input = h('input', { type: 'file', multiple: true, name: 'files', id: 'files', class: 'file-input' });
  const chosenText = h('p', { class: 'hint', id: 'files-chosen', 'aria-live': 'polite' });
  const showChosen = () => {
    chosenText.textContent = chosen.length
      ? `${t('chosenFiles', { count: chosen.length })}: ${chosen.map((f) => f.name).join(', ')}`
      : t('noFileChosen');
  };
  input.setAttribute('aria-describedby', 'files-hint files-chosen');
  clearChosen = () => {
    chosen = [];
    if (input.isConnected) {
      input.value = '';
      showChosen();
    }
  };
  input.addEventListener('change', () => {
    chosen = Array.from(input.files ?? []);
    showChosen();
  });
  const drop = h(
    'div',
    { class: 'dropzone' },
    h('span', { class: 'field-title' }, t('files')),
    h('p', { class: 'hint', id: 'files-hint' }, t('dropHint')),
    h(
      'div',
      { class: 'file-picker' },
      input,
      h('label', { for: 'files', class: 'button secondary file-button' }, t('chooseFiles')),
    ),
    chosenText,
  );
  drop.addEventListener('dragover', (e) => {
    e.preventDefault();
    drop.classList.add('dragging');
  });
  drop.addEventListener('dragleave', () => drop.classList.remove('dragging'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('dragging');
    const files = Array.from(e.dataTransfer?.files ?? []);
    if (files.length) {
      chosen = files;
      showChosen();
    }
  });
  return { input, drop, showChosen };
}

interface DraftFields {
  d: HTMLInputElement;
  m: HTMLInputElement;
  c: HTMLInputElement;
  i: HTMLTextAreaElement;
}

/** The destination, recipients and message fields, showing and keeping the draft. */
function draftFields(): DraftFields {
  const d = h('input', {
    name: 'd',
    autocomplete: 'off',
    autocapitalize: 'none',
    spellcheck: 'false',
    maxlength: UPLOAD_PARAMETER_MAX_LENGTH.d,
    value: draft.d,
  });
  const m = h('input', { name: 'm', type: 'text', inputmode: 'email', autocomplete: 'off', value: draft.m });
  const c = h('input', { name: 'c', type: 'text', inputmode: 'tel', autocomplete: 'off', value: draft.c });
  const i = h('textarea', { name: 'i', rows: 3, maxlength: UPLOAD_PARAMETER_MAX_LENGTH.i });
  i.value = draft.i;
  for (const [key, el] of [
    ['d', d],
    ['m', m],
    ['c', c],
    ['i', i],
  ] as const) {
    el.addEventListener('input', () => {
      draft[key] = el.value;
    });
  }
  showDraft = () => {
    d.value = draft.d;
    m.value = draft.m;
    c.value = draft.c;
    i.value = draft.i;
  };
  return { d, m, c, i };
}

/** Queues one upload per chosen file, unless none is chosen or a field is wrong. */
function sendChosen(
  fields: DraftFields,
  input: HTMLInputElement,
  status: HTMLElement,
  list: HTMLElement,
): void {
  const { d, m, c, i } = fields;
  if (chosen.length === 0) {
    say(status, 'error', t('noFiles'));
    input.focus();
    return;
  }
  say(status, null);
  const params: UploadParams = {
    d: d.value.trim(),
    m: m.value.trim(),
    c: c.value.trim(),
    i: i.value.trim(),
  };
  const invalid = invalidField(params);
  if (invalid) {
    say(status, 'error', invalid.message);
    ({ d, m, c })[invalid.field].focus();
    return;
  }
  const batch = chosen;
  for (const file of batch) {
    const u: Upload = {
      id: nextId('up'),
      batch,
      file,
      params,
      state: 'waiting',
      loaded: 0,
      startedAt: 0,
      speed: 0,
      links: [],
      error: '',
      handle: null,
      redraw: () => {},
    };
    uploads.push(u);
    put(list, uploadRow(u));
  }
  pump();
}

export function renderSend(ctx: PageContext): void {
  const { input, drop, showChosen } = filePicker();
  const fields = draftFields();
  const { d, m, c, i } = fields;
  const status = h('div', { class: 'status-slot' });
  const list = h('ul', { class: 'uploads' });
  const listHeadingId = nextId('uploads');

  const form = h(
    'form',
    {
      class: 'card',
      novalidate: true,
      onsubmit: (e) => {
        e.preventDefault();
        sendChosen(fields, input, status, list);
      },
    },
    drop,
    field(t('destination'), d, t('destinationHint')),
    field(t('emails'), m, t('emailsHint')),
    field(t('mobiles'), c, t('mobilesHint')),
    field(t('message'), i, t('messageHint')),
    status,
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, t('send'))),
  );
  put(list, ...uploads.map(uploadRow));
  showChosen();
  // After a reload the browser cannot reopen a file by itself: say which uploads can continue.
  const interrupted = interruptedUploads().filter((x) => !uploads.some((u) => u.file.name === x.name));
  if (interrupted.length > 0)
    say(status, 'info', t('resumeOffer', { names: interrupted.map((x) => x.name).join(', ') }));
  put(
    ctx.main,
    pageHeading(t('sendTitle')),
    ctx.flash ? notice('info', ctx.flash) : null,
    form,
    h(
      'section',
      { 'aria-labelledby': listHeadingId, class: 'card' },
      h('h2', { id: listHeadingId }, t('uploads')),
      list,
    ),
  );
}
