// The page of an upload request's link, {portal}request?t=TOKEN (docs/requests.md): what is asked
// and by whom, the limits and what is left (GET {base}/requests/open), "Send code" and a code field
// for an invited link (POST {base}/requests/pin), then the files, sent one after another with tus
// (request-upload.ts), checked against the limits before any byte leaves. Nobody signs in.
// The visit's state lives at module level, so a language switch redraws it without losing uploads.
import { ApiError, call } from '../api.js';
import { detailsBox, field, h, nextId, notice, pageHeading, put, say, swap } from '../dom.js';
import { formatDate, formatSize } from '../format.js';
import { currentLang, t } from '../i18n.js';
import type { PageContext } from '../page-context.js';
import {
  type RequestUpload,
  refusalWord,
  requestRow,
  sendToRequest,
  UploadRefused,
} from './request-upload.js';
import { type RequestWord, rt } from './request-words.js';

/** What GET {base}/requests/open answers in `request`. */
interface RequestInfo {
  title: string;
  message: string;
  requester: string;
  expires: string;
  limits: { maxFiles: number; maxFileBytes: number; maxTotalBytes: number };
  left: { files: number; bytes: number };
  pin: boolean;
}

type Loaded =
  | { kind: 'loading' }
  | { kind: 'open'; info: RequestInfo }
  | { kind: 'invalid' }
  | { kind: 'closed' }
  | { kind: 'error'; word: RequestWord };

const visit = {
  token: null as string | null,
  loaded: { kind: 'loading' } as Loaded,
  pin: '',
  chosen: [] as File[],
  uploads: [] as RequestUpload[],
  running: false,
  /** Every file of the last Send was received. */
  done: false,
  /** The request took its last file (or closed) while this visit sent files. */
  noMore: false,
  /** What the last action left to say under the form. */
  said: null as { kind: 'error' | 'success'; text: string } | null,
};
let main: HTMLElement | null = null;

const generalWord = (status: number): RequestWord =>
  status === 0 ? 'errNetwork' : status === 429 ? 'errTooMany' : 'errServer';

/** The request's facts from the server; a 410 or an unknown token is a state of the page. */
async function load(token: string): Promise<Loaded> {
  if (!token) return { kind: 'invalid' };
  try {
    const res = await call<{ request?: RequestInfo }>('/requests/open', { query: { t: token } });
    return res.request ? { kind: 'open', info: res.request } : { kind: 'error', word: 'errServer' };
  } catch (err) {
    const status = err instanceof ApiError ? err.status : 0;
    if (status === 401 || status === 400) return { kind: 'invalid' };
    if (status === 410) return { kind: 'closed' };
    return { kind: 'error', word: generalWord(status) };
  }
}

function details(info: RequestInfo): HTMLElement {
  const { limits, left } = info;
  const rows: [string, string][] = [
    [rt('askedBy'), info.requester],
    [rt('openUntil'), formatDate(Date.parse(info.expires))],
    [rt('filesLeft'), rt('filesLeftValue', { left: left.files, max: limits.maxFiles })],
    [rt('perFile'), formatSize(limits.maxFileBytes)],
    [
      rt('totalLeft'),
      rt('totalLeftValue', { left: formatSize(left.bytes), max: formatSize(limits.maxTotalBytes) }),
    ],
  ];
  return detailsBox(
    { class: 'card' },
    rows,
    info.message ? { caption: rt('message'), text: info.message } : null,
  );
}

/** What stops these files before any byte is sent: the request's limits as last read. */
function overLimit(info: RequestInfo, files: File[]): string | null {
  if (files.length === 0) return rt('noFiles');
  if (files.length > info.left.files)
    return rt('tooManyFiles', { count: files.length, left: info.left.files });
  const big = files.find((f) => f.size > info.limits.maxFileBytes);
  if (big)
    return rt('fileTooBig', {
      name: big.name,
      size: formatSize(big.size),
      max: formatSize(info.limits.maxFileBytes),
    });
  const total = files.reduce((n, f) => n + f.size, 0);
  if (total > info.left.bytes)
    return rt('totalTooBig', { size: formatSize(total), left: formatSize(info.left.bytes) });
  return null;
}

/** "Send code" and the code's field, for a link sent to one address. */
function pinPart(status: HTMLElement): { part: HTMLElement[]; code: HTMLInputElement } {
  const code = h('input', {
    name: 'code',
    inputmode: 'numeric',
    autocomplete: 'one-time-code',
    pattern: '[0-9]*',
    maxlength: 6,
    value: visit.pin,
  });
  const sendCode = h('button', { type: 'button', class: 'secondary' }, rt('sendCode'));
  sendCode.addEventListener('click', async () => {
    sendCode.disabled = true;
    try {
      // The code's message speaks the language of this page.
      await call('/requests/pin', { method: 'POST', query: { t: visit.token ?? '', lang: currentLang() } });
      say(status, 'success', rt('codeSent'));
      code.focus();
    } catch (err) {
      const s = err instanceof ApiError ? err.status : 0;
      if (s === 410 || s === 401) return reload();
      say(status, 'error', rt(s === 429 ? 'codeTooSoon' : s === 403 ? 'linkLocked' : generalWord(s)));
    } finally {
      sendCode.disabled = false;
    }
  });
  const part = [
    h('p', {}, rt('pinIntro')),
    h('div', { class: 'actions' }, sendCode),
    field(rt('code'), code, rt('codeHint')),
  ];
  return { part, code };
}

/** The file input: the native button speaks the browser's language, so a label opens it. */
function filePicker(info: RequestInfo): { picker: HTMLElement; input: HTMLInputElement } {
  const input = h('input', { type: 'file', multiple: true, name: 'files', id: 'files', class: 'file-input' });
  const chosenText = h('p', { class: 'hint', id: 'files-chosen', 'aria-live': 'polite' });
  const showChosen = () => {
    chosenText.textContent = visit.chosen.length
      ? rt('chosen', { count: visit.chosen.length, names: visit.chosen.map((f) => f.name).join(', ') })
      : rt('noFileChosen');
  };
  input.setAttribute('aria-describedby', 'files-hint files-chosen');
  input.addEventListener('change', () => {
    visit.chosen = Array.from(input.files ?? []);
    showChosen();
  });
  showChosen();
  const hint = rt('filesHint', {
    files: info.left.files,
    size: formatSize(Math.min(info.limits.maxFileBytes, info.left.bytes)),
    total: formatSize(info.left.bytes),
  });
  const picker = h(
    'div',
    { class: 'dropzone' },
    h('span', { class: 'field-title' }, rt('files')),
    h('p', { class: 'hint', id: 'files-hint' }, hint),
    h(
      'div',
      { class: 'file-picker' },
      input,
      h('label', { for: 'files', class: 'button secondary file-button' }, rt('chooseFiles')),
    ),
    chosenText,
  );
  return { picker, input };
}

function form(info: RequestInfo): HTMLElement {
  const status = h('div', { class: 'status-slot' });
  if (visit.said) say(status, visit.said.kind, visit.said.text);
  const pin = info.pin ? pinPart(status) : null;
  const { picker, input } = filePicker(info);
  const submit = h('button', { type: 'submit', disabled: visit.running }, rt('send'));
  const onsubmit = (e: Event) => {
    e.preventDefault();
    if (visit.running) return;
    // Files of this choice already received are not sent again.
    const files = visit.chosen.filter((f) => !visit.uploads.some((u) => u.file === f && u.state === 'done'));
    const problem = overLimit(info, files);
    if (problem) {
      say(status, 'error', problem);
      input.focus();
      return;
    }
    if (pin && !/^\d{6}$/.test(pin.code.value.trim())) {
      say(status, 'error', rt('codeNeeded'));
      pin.code.focus();
      return;
    }
    visit.pin = pin ? pin.code.value.trim() : '';
    say(status, null);
    submit.disabled = true;
    void sendFiles(files);
  };
  return h(
    'form',
    { class: 'card', novalidate: true, onsubmit },
    pin?.part,
    picker,
    status,
    h('div', { class: 'actions' }, submit),
  );
}

/** Why a file was not sent, in its row: a refused code is explained once, under the form. */
const CODE_WORDS: RequestWord[] = ['wrongCode', 'codeExpired', 'linkLocked', 'codeNeeded'];
const rowReason = (word: RequestWord) => rt(CODE_WORDS.includes(word) ? 'codeRefused' : word);

/** Sends the files one after another; a refusal about the PIN or the request stops the rest. */
async function sendFiles(files: File[]): Promise<void> {
  visit.running = true;
  visit.said = null;
  visit.uploads = visit.uploads.filter((u) => u.state === 'done' || !files.includes(u.file));
  const batch: RequestUpload[] = files.map((file) => ({
    file,
    state: 'waiting',
    loaded: 0,
    error: '',
    redraw: () => {},
  }));
  visit.uploads.push(...batch);
  draw();
  let stop: RequestWord | null = null;
  for (const u of batch) {
    if (stop) {
      Object.assign(u, { state: 'failed', error: rowReason(stop) });
      u.redraw();
      continue;
    }
    u.state = 'uploading';
    u.redraw();
    try {
      await sendToRequest(u.file, visit.token ?? '', visit.pin, (sent) => {
        u.loaded = sent;
        u.redraw();
      });
      Object.assign(u, { state: 'done', loaded: u.file.size });
    } catch (err) {
      const word = refusalWord(err);
      Object.assign(u, { state: 'failed', loaded: 0, error: rowReason(word) });
      if (err instanceof UploadRefused && (err.status === 403 || err.status === 410 || err.status === 409))
        stop = word;
    }
    u.redraw();
  }
  await finish(batch, stop);
}

async function finish(batch: RequestUpload[], stop: RequestWord | null): Promise<void> {
  visit.running = false;
  const failed = batch.filter((u) => u.state !== 'done').length;
  // What is left now (the limits changed with what arrived); a request that took its last file
  // answers 410 and takes no more.
  const now = await load(visit.token ?? '');
  if (now.kind === 'open') visit.loaded = now;
  else if (now.kind === 'closed') visit.noMore = true;
  if (failed === 0) {
    visit.done = true;
    visit.chosen = [];
  } else {
    const first = stop && stop !== 'closed' && stop !== 'full' ? `${rt(stop)} ` : '';
    visit.said = { kind: 'error', text: `${first}${rt('someFailed', { count: failed })}` };
  }
  draw();
  if (failed === 0) main?.querySelector<HTMLElement>('#received')?.focus();
}

function receivedCard(info: RequestInfo): HTMLElement {
  const count = visit.uploads.filter((u) => u.state === 'done').length;
  const more = !visit.noMore && info.left.files > 0;
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'received' },
    h('h2', { id: 'received', tabindex: -1 }, rt('received')),
    notice('success', rt('allReceived', { count, requester: info.requester })),
    more
      ? h(
          'div',
          { class: 'actions' },
          h(
            'button',
            {
              type: 'button',
              class: 'secondary',
              onclick: () => {
                Object.assign(visit, { done: false, uploads: [], chosen: [], said: null });
                draw();
              },
            },
            rt('sendMore'),
          ),
        )
      : null,
  );
}

function uploadList(): HTMLElement | null {
  if (visit.uploads.length === 0) return null;
  const id = nextId('uploads');
  return h(
    'section',
    { class: 'card', 'aria-labelledby': id },
    h('h2', { id }, rt('uploads')),
    h('ul', { class: 'uploads' }, visit.uploads.map(requestRow)),
  );
}

/** Draws the page from the visit's state. */
function draw(): void {
  if (!main) return;
  const loaded = visit.loaded;
  if (loaded.kind === 'loading')
    swap(main, pageHeading(rt('pageTitle')), h('p', { role: 'status' }, t('loading')));
  else if (loaded.kind === 'invalid')
    swap(main, pageHeading(rt('invalidTitle')), notice('error', rt('invalidText')));
  else if (loaded.kind === 'closed')
    swap(main, pageHeading(rt('closedTitle')), notice('error', rt('closedText')), uploadList());
  else if (loaded.kind === 'error')
    swap(main, pageHeading(rt('pageTitle')), notice('error', rt(loaded.word)));
  else {
    const { info } = loaded;
    swap(main, pageHeading(info.title), details(info));
    put(main, visit.done ? receivedCard(info) : form(info), uploadList());
  }
}

/** Reads the request again (a 410 or an unknown link turns the page into its notice). */
async function reload(): Promise<void> {
  visit.loaded = await load(visit.token ?? '');
  draw();
}

export function renderRequest(ctx: PageContext): void {
  main = ctx.main;
  const token = new URLSearchParams(location.search).get('t') ?? '';
  if (visit.token !== token) {
    visit.token = token;
    visit.loaded = { kind: 'loading' };
    void reload();
  }
  draw();
}
