// Transports: how a rendered message leaves the building. E-mail goes over SMTP (nodemailer);
// SMS goes to Twilio's REST Messages API or to a plain JSON webhook (docs/notifications.md). A transport
// throws on failure; the outbox decides about retries.
import type { Transporter } from 'nodemailer';
import { type Config, ConfigError } from '../../app/config.js';
import type { Channel } from './templates.js';

/** What the outbox carries: messages to people (e-mail, SMS) and webhook events to systems. */
export type OutboxChannel = Channel | 'webhook';

export interface OutgoingMessage {
  /**
   * The same at every attempt to send one outbox message (and unique to it): a send that went out
   * but was not recorded (a crash between the two) is sent again, and this is how the receiving
   * side tells the copy from a new message (the e-mail's Message-ID, the SMS webhook's header).
   */
  id: string;
  channel: OutboxChannel;
  to: string;
  subject: string;
  text: string;
}

export interface Transport {
  /** Short name for logs and `remessa outbox list`, e.g. smtp, twilio, webhook. */
  readonly name: string;
  send(message: OutgoingMessage): Promise<void>;
  close(): void;
}

/** Thrown by a transport when no retry can help (e.g. a webhook receiver answered 410 Gone). */
export class PermanentFailure extends Error {}

const SEND_TIMEOUT_MS = 30_000;

export class SmtpTransport implements Transport {
  readonly name = 'smtp';
  private mailer: Promise<Transporter> | null = null;

  constructor(
    private readonly smtpUrl: string,
    private readonly from: string,
  ) {}

  /** nodemailer is loaded on the first message (~14 MiB the server need not carry until then). */
  private transporter(): Promise<Transporter> {
    this.mailer ??= import('nodemailer').then(({ default: nodemailer }) =>
      // smtp:// upgrades with STARTTLS when the server offers it; smtps:// is TLS from the start.
      nodemailer.createTransport({
        url: this.smtpUrl,
        connectionTimeout: 10_000,
        greetingTimeout: 10_000,
        socketTimeout: SEND_TIMEOUT_MS,
      }),
    );
    return this.mailer;
  }

  async send(message: OutgoingMessage): Promise<void> {
    await (await this.transporter()).sendMail({
      messageId: `<remessa.${message.id}@${/@([^>\s]+)/.exec(this.from)?.[1] ?? 'remessa.invalid'}>`,
      from: this.from,
      to: message.to,
      subject: message.subject,
      text: message.text,
      headers: { 'Auto-Submitted': 'auto-generated' },
    });
  }

  close(): void {
    this.mailer?.then((m) => m.close()).catch(() => {});
  }
}

/**
 * Twilio "Create a Message": POST …/2010-04-01/Accounts/{AccountSid}/Messages.json, form-encoded
 * To, From, Body, HTTP Basic with the Account SID (REMESSA_SMS_USER) and Auth Token
 * (REMESSA_SMS_PASSWORD). REMESSA_SMS_URL is either that full Messages.json URL or just the API
 * origin (https://api.twilio.com), to which the path is appended.
 */
export class TwilioTransport implements Transport {
  readonly name = 'twilio';
  readonly endpoint: string;

  constructor(
    url: string,
    private readonly user: string,
    private readonly password: string,
    private readonly from: string,
  ) {
    const trimmed = url.replace(/\/+$/, '');
    this.endpoint = /\/Messages\.json$/.test(trimmed)
      ? trimmed
      : `${trimmed}/2010-04-01/Accounts/${encodeURIComponent(user)}/Messages.json`;
  }

  async send(message: OutgoingMessage): Promise<void> {
    const auth = Buffer.from(`${this.user}:${this.password}`).toString('base64');
    const res = await fetch(this.endpoint, {
      method: 'POST',
      headers: {
        Authorization: `Basic ${auth}`,
        'Content-Type': 'application/x-www-form-urlencoded',
        Accept: 'application/json',
      },
      body: new URLSearchParams({ To: message.to, From: this.from, Body: message.text }).toString(),
      signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
    });
    const text = await res.text();
    if (!res.ok) {
      let reason = text.slice(0, 200);
      try {
        const body = JSON.parse(text) as { message?: unknown; code?: unknown };
        if (typeof body.message === 'string') reason = `${body.code ?? ''} ${body.message}`.trim();
      } catch {
        // not JSON: keep the raw start of the body
      }
      throw new Error(`twilio answered HTTP ${res.status}: ${reason}`);
    }
  }

  close(): void {}
}

/** Generic SMS gateway: POST {"to": "+55…", "text": "…"} as JSON; any 2xx is success. */
export class WebhookTransport implements Transport {
  readonly name = 'webhook';

  constructor(
    private readonly url: string,
    private readonly user: string | null,
    private readonly password: string | null,
  ) {}

  async send(message: OutgoingMessage): Promise<void> {
    const headers: Record<string, string> = {
      'Content-Type': 'application/json',
      'Remessa-Message-Id': message.id,
    };
    if (this.user !== null) {
      headers['Authorization'] =
        `Basic ${Buffer.from(`${this.user}:${this.password ?? ''}`).toString('base64')}`;
    }
    const res = await fetch(this.url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ to: message.to, text: message.text }),
      signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
    });
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`SMS webhook answered HTTP ${res.status}`);
  }

  close(): void {}
}

/** The configured transport per channel; null where nothing is configured (message is logged). */
export function transportsFrom(config: Config): Record<Channel, Transport | null> {
  const email = config.smtpUrl ? new SmtpTransport(config.smtpUrl, config.mailFrom) : null;
  let sms: Transport | null = null;
  if (config.smsProvider === 'twilio') {
    if (!config.smsUser || !config.smsPassword || !config.smsFrom) {
      throw new ConfigError(
        'REMESSA_SMS_PROVIDER=twilio needs REMESSA_SMS_USER, REMESSA_SMS_PASSWORD and REMESSA_SMS_FROM',
      );
    }
    sms = new TwilioTransport(config.smsUrl!, config.smsUser, config.smsPassword, config.smsFrom);
  } else if (config.smsProvider === 'webhook') {
    sms = new WebhookTransport(config.smsUrl!, config.smsUser, config.smsPassword);
  }
  return { email, sms };
}
