// The admin's transfers (docs/admin.md, "Transfers"): every file uploaded, held or purged, with its
// recipients and downloads, and one file's timeline told from its audit rows and outbox messages.
// What is shown comes from rows that never hold a PIN, a link token or a message's text (the
// outbox's sealed text is not even read); a detail key that could name one is dropped all the same.
import { invalid, notFound } from '../../platform/errors.js';
import { detailOf, iso, type Page, pageOf, parseCursor, parseLimit, parseRange } from './report-params.js';
import type {
  FileEventRow,
  TransferFilter,
  TransferRow,
  TransferState,
  TransferStore,
} from './transfer-store.js';

export interface TransferQuery {
  user?: string;
  state?: string;
  q?: string;
  from?: string;
  to?: string;
  limit?: number;
  cursor?: string;
}

export interface RecipientView {
  address: string;
  channel: 'email' | 'sms';
  /** the outbox status of the last message announcing the file to them */
  status: 'pending' | 'sent' | 'failed' | 'logged';
  /** complete downloads through their link */
  downloads: number;
}

export interface TransferView {
  id: number;
  name: string | null;
  size: number | null;
  sha256: string | null;
  state: TransferState;
  owner: string | null;
  sender: string | null;
  created: string | null;
  expires: string | null;
  retired: string | null;
  purged: string | null;
  recipients: RecipientView[];
  /** complete downloads, through any link */
  downloads: number;
}

export interface TimelineEntry {
  time: string;
  source: 'audit' | 'outbox';
  event: string;
  detail: Record<string, unknown> | string | null;
  user: string | null;
  remote: string | null;
  channel: string | null;
  status: string | null;
  attempts: number | null;
  lastError: string | null;
}

export interface TransferReportDeps {
  store: TransferStore;
}

const STATES: readonly TransferState[] = ['area', 'backup', 'purged'];
/** Detail keys that could name a secret: never shown, whatever wrote them. */
const SECRET_KEY = /pin|token|text|payload|secret|password/i;

export class TransferReport {
  private readonly store: TransferStore;

  constructor(deps: TransferReportDeps) {
    ({ store: this.store } = deps);
  }

  async list(query: TransferQuery): Promise<Page<TransferView>> {
    const filter = filterOf(query);
    const limit = parseLimit(query.limit);
    const before = parseCursor(query.cursor);
    const { state } = filter;
    const held = state === 'purged' ? [] : await this.store.held(filter, before, limit + 1);
    const purged =
      state === 'area' || state === 'backup' ? [] : await this.store.purged(filter, before, limit + 1);
    // Both are newest first by file id: the first limit + 1 of their union are among them.
    const rows = [...held, ...purged].sort((a, b) => b.id - a.id).slice(0, limit + 1);
    const page = pageOf(rows, limit, (r) => r);
    return { items: await this.describe(page.items), next: page.next };
  }

  /** One file and what happened to it, in time order. */
  async timeline(id: number): Promise<{ file: TransferView; timeline: TimelineEntry[] }> {
    if (!Number.isSafeInteger(id) || id < 1) throw invalid('id: a file id');
    const row = await this.store.one(id);
    if (!row) throw notFound('no such file');
    const [file] = await this.describe([row]);
    const events = (await this.store.fileEvents(id)).map(auditEntry);
    const messages = (await this.store.messages([id])).map((m) => ({
      at: m.created_at,
      entry: {
        time: iso(m.created_at)!,
        source: 'outbox' as const,
        event: m.kind,
        detail: { outbox: m.id, to: m.recipient },
        user: m.user_name,
        remote: null,
        channel: m.channel,
        status: m.status,
        attempts: m.attempts,
        lastError: m.last_error,
      },
    }));
    // In time order; an outbox message after the audit rows of the same moment (its notify.queued).
    const timeline = [...events, ...messages].sort((a, b) => a.at - b.at).map((e) => e.entry);
    return { file: file!, timeline };
  }

  /** The rows with their recipients and download counts: three reads for the whole page. */
  private async describe(rows: TransferRow[]): Promise<TransferView[]> {
    const ids = rows.map((r) => r.id);
    const links = await this.store.events(ids, ['link.created']);
    const downloads = await this.store.events(ids, ['download']);
    const messages = await this.store.messages(ids, 'file-link');
    const status = new Map<string, string>();
    for (const m of messages) status.set(`${m.file_id}|${m.recipient}`, m.status); // the last one wins
    const byLink = new Map<number, number>();
    const byFile = new Map<number, number>();
    for (const d of downloads) {
      const detail = objectOf(d.detail);
      if (detail['complete'] !== true) continue;
      byLink.set(Number(detail['link']), (byLink.get(Number(detail['link'])) ?? 0) + 1);
      byFile.set(d.file_id!, (byFile.get(d.file_id!) ?? 0) + 1);
    }
    const recipients = new Map<number, RecipientView[]>();
    for (const l of links) {
      const detail = objectOf(l.detail);
      const address = typeof detail['to'] === 'string' ? detail['to'] : '';
      const list = recipients.get(l.file_id!) ?? [];
      list.push({
        address,
        channel: detail['channel'] === 'sms' ? 'sms' : 'email',
        status: (status.get(`${l.file_id}|${address}`) ?? 'pending') as RecipientView['status'],
        downloads: byLink.get(Number(detail['link'])) ?? 0,
      });
      recipients.set(l.file_id!, list);
    }
    return rows.map((r) => ({
      id: r.id,
      name: r.name,
      size: r.size,
      sha256: r.sha256,
      state: r.state,
      owner: r.owner,
      sender: r.sender,
      created: iso(r.created),
      expires: iso(r.expires),
      retired: iso(r.retired),
      purged: iso(r.purged),
      recipients: recipients.get(r.id) ?? [],
      downloads: byFile.get(r.id) ?? 0,
    }));
  }
}

function filterOf(query: TransferQuery): TransferFilter {
  const { user, state, q } = query;
  if (user !== undefined && (user.trim() === '' || user.length > 254)) throw invalid('user: an account name');
  if (state !== undefined && !STATES.includes(state as TransferState))
    throw invalid(`state: one of ${STATES.join(', ')}`);
  if (q !== undefined && (q === '' || q.length > 255)) throw invalid('q: part of a file name');
  return {
    ...(user !== undefined && { user: user.trim() }),
    ...(state !== undefined && { state: state as TransferState }),
    ...(q !== undefined && { q }),
    ...parseRange(query.from, query.to),
  };
}

function auditEntry(row: FileEventRow): { at: number; entry: TimelineEntry } {
  const detail = shown(detailOf(row.detail));
  const fields = typeof detail === 'object' && detail !== null ? detail : {};
  const text = (key: string) => (typeof fields[key] === 'string' ? (fields[key] as string) : null);
  return {
    at: row.at,
    entry: {
      time: iso(row.at)!,
      source: 'audit',
      event: row.event,
      detail,
      user: row.user_name,
      remote: row.remote,
      channel: text('channel'),
      status: null,
      attempts: typeof fields['attempts'] === 'number' ? fields['attempts'] : null,
      lastError: text('error'),
    },
  };
}

/** A detail without the keys that could name a secret. */
function shown(detail: Record<string, unknown> | string | null): Record<string, unknown> | string | null {
  if (typeof detail !== 'object' || detail === null) return detail;
  return Object.fromEntries(Object.entries(detail).filter(([key]) => !SECRET_KEY.test(key)));
}

function objectOf(text: string | null): Record<string, unknown> {
  const detail = detailOf(text);
  return typeof detail === 'object' && detail !== null ? detail : {};
}
