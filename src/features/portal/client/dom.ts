// A tiny element builder: h('button', { type: 'button', onclick }, 'text'). No innerHTML anywhere,
// so server data can never inject markup.

type Child = Node | string | null | undefined | false;
type Handler = (event: Event) => void;
export type Attrs = Record<string, string | number | boolean | Handler | null | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === 'function') {
      el.addEventListener(name.replace(/^on/, ''), value);
    } else if (value === true) {
      el.setAttribute(name, '');
    } else {
      el.setAttribute(name, String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(parent: Node, children: (Child | Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
  }
}

export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

let uid = 0;
/** A fresh element id, for label/aria-describedby wiring. */
export function nextId(prefix: string): string {
  uid += 1;
  return `${prefix}-${uid}`;
}

/** A labelled input with an optional hint wired through aria-describedby. */
export function field(
  label: string,
  input: HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement,
  hint?: string,
): HTMLDivElement {
  const id = input.id || nextId('f');
  input.id = id;
  const hintEl = hint ? h('p', { class: 'hint', id: `${id}-hint` }, hint) : null;
  if (hintEl) input.setAttribute('aria-describedby', hintEl.id);
  return h('div', { class: 'field' }, h('label', { for: id }, label), hintEl, input);
}

/** A live status line: role=alert for errors, role=status otherwise. */
export function notice(kind: 'error' | 'info' | 'success', text: string): HTMLParagraphElement {
  return h('p', { class: `notice notice-${kind}`, role: kind === 'error' ? 'alert' : 'status' }, text);
}

/** Replaces the content of a message slot (keeps the live region itself in place). */
export function say(slot: Element, kind: 'error' | 'info' | 'success' | null, text = ''): void {
  clear(slot);
  if (kind && text) slot.appendChild(notice(kind, text));
}

/** A form's input refused before it is sent: what to say, and the field to put the focus in. */
export interface FormProblem {
  text: string;
  field: HTMLElement;
}

/**
 * A narrow card form: on submit, the first problem `check` finds is said in `status` with the
 * focus in its field; otherwise `send` runs with the submit button disabled until it ends.
 */
export function cardForm(
  parts: {
    status: Element;
    submit: HTMLButtonElement;
    check?: () => FormProblem | null;
    send: () => Promise<void>;
  },
  ...children: (Child | Child[])[]
): HTMLFormElement {
  const onsubmit = async (e: Event) => {
    e.preventDefault();
    const problem = parts.check?.() ?? null;
    if (problem) {
      say(parts.status, 'error', problem.text);
      problem.field.focus();
      return;
    }
    parts.submit.disabled = true;
    try {
      await parts.send();
    } finally {
      parts.submit.disabled = false;
    }
  };
  return h('form', { class: 'card narrow', novalidate: true, onsubmit }, ...children);
}

/** Label and value rows as a description list, then a sender's message under its caption. */
export function detailsBox(
  attrs: Attrs,
  rows: [string, string][],
  message: { caption: string; text: string } | null,
): HTMLDivElement {
  return h(
    'div',
    attrs,
    h(
      'dl',
      { class: 'details' },
      rows.map(([k, v]) => h('div', {}, h('dt', {}, k), h('dd', {}, v))),
    ),
    message
      ? h(
          'figure',
          { class: 'message' },
          h('figcaption', {}, message.caption),
          h('blockquote', {}, message.text),
        )
      : null,
  );
}

/** The page's h1 (focusable, so route changes can move focus to it) and the document title. */
export function pageHeading(text: string): HTMLHeadingElement {
  document.title = `${text} · Remessa`;
  return h('h1', { tabindex: -1 }, text);
}

/** parent.append that skips null/false and flattens arrays. */
export function put(parent: Node, ...children: (Child | Child[])[]): void {
  append(parent, children);
}

/** parent.replaceChildren that skips null/false and flattens arrays. */
export function swap(parent: Element, ...children: (Child | Child[])[]): void {
  clear(parent);
  append(parent, children);
}

/** The user-name input of the sign-in, forgot-password and first-access forms. */
export function usernameInput(): HTMLInputElement {
  return h('input', {
    name: 'username',
    autocomplete: 'username',
    autocapitalize: 'none',
    spellcheck: 'false',
    required: true,
    maxlength: 64,
  });
}
