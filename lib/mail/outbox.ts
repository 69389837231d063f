/**
 * E-mail over SMTP (docs/self-service.md, "E-mail"): every mail is first written to the store's outbox
 * (tw_mail), then sent by a loop of this process through nodemailer (an optional dependency, required on
 * the first mail sent). A mail server that is down or refuses never fails the request that asked for the
 * mail: the attempt fails, the mail is tried again after 1 s, 2 s, 4 s, ... (doubling, at most 10 minutes
 * apart, 12 attempts: about 40 minutes in all), each failure logged `mail_failed` with its code and the
 * server's answer (never the password: it and its base64 form are masked in any message) and counted in
 * `throughway_mail_failures_total`. Several nodes on one store each take a due mail with a conditional
 * UPDATE (SelfServiceStore.claimMail), so a mail is sent once.
 *
 * STARTTLS (RFC 3207) is required when `enable_start_tls`, and never tried otherwise; the server's
 * certificate is verified against Node's certificate authorities, or the trust store given (`ca`). AUTH
 * (RFC 4954) is used when `enable_authentication`.
 */
import type { Transporter } from 'nodemailer';
import { load } from '../config/packages';
import type { Logger } from '../log';
import type { MailRecord, SelfServiceStore } from '../store/selfservice';
import type { MailChannel, MailSettings, SmtpSettings } from './settings';

/** The kinds of mail, each through its table's server. */
export const MAIL_KINDS = {
  confirm: 'account',
  recover: 'account',
  'sign-up': 'account',
  'new-version': 'notification',
} as const satisfies Record<string, MailChannel>;
export type MailKind = keyof typeof MAIL_KINDS;

export interface RetryPolicy {
  /** The first retry's delay; each next one doubles. */
  readonly baseMs: number;
  readonly maxMs: number;
  /** Attempts in all before the mail is given up (state `failed`). */
  readonly attempts: number;
  /** How often the outbox is read for due mail. */
  readonly pollMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = Object.freeze({ baseMs: 1000, maxMs: 10 * 60_000, attempts: 12, pollMs: 1000 });

/** Longest subject (RFC 5322 §2.1.1's line limit) and body this outbox takes (UTF-16 units). */
export const MAX_SUBJECT = 998;
/** MySQL's TEXT holds 65,535 bytes; 16,384 UTF-16 units are at most 49,152 bytes of UTF-8. */
export const MAX_BODY = 16 * 1024;

export interface MailerOptions {
  readonly store: SelfServiceStore;
  readonly settings: MailSettings;
  readonly logger: Logger;
  /** Where the counters are registered (lib/observability/metrics.ts Metrics, structurally: observers sit beside this floor). */
  readonly metrics?: { register(source: { name: string; help: string; type: 'counter'; collect: () => number }): void };
  /** Certificate authorities (PEM) that verify the mail server's certificate for STARTTLS; Node's own by default. */
  readonly ca?: readonly string[];
  readonly retry?: Partial<RetryPolicy>;
  readonly now?: () => number;
}

export interface OutgoingMail {
  readonly kind: MailKind;
  readonly to: string;
  readonly subject: string;
  readonly text: string;
  readonly tenant?: string;
}

/** A message without a line break and control characters (a header value cannot smuggle another header). */
const oneLine = (s: string): string => s.replace(/[\u0000-\u001f\u007f]+/g, ' ').slice(0, MAX_SUBJECT);

/**
 * A failure's text as logged and stored: without the password (clear, base64 as AUTH LOGIN sends it, and
 * AUTH PLAIN's base64 of user and password, RFC 4616), control characters, or more than 500 characters.
 */
export function scrubSecret(text: string, auth: SmtpSettings['auth']): string {
  let out = text;
  const pass = auth?.pass ?? '';
  if (pass !== '') {
    for (const secret of [
      pass,
      Buffer.from(pass).toString('base64'),
      Buffer.from(`\u0000${auth?.user ?? ''}\u0000${pass}`).toString('base64'),
    ])
      out = out.split(secret).join('****');
  }
  return out.replace(/[\u0000-\u001f\u007f]+/g, ' ').slice(0, 500);
}

export class Mailer {
  private readonly retry: RetryPolicy;
  private readonly now: () => number;
  private readonly transports = new Map<MailChannel, Transporter>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private closed = false;
  /** Failed attempts since start (the metric). */
  failures = 0;
  sent = 0;

  constructor(private readonly o: MailerOptions) {
    this.retry = { ...DEFAULT_RETRY, ...o.retry };
    this.now = o.now ?? Date.now;
    o.metrics?.register({
      name: 'throughway_mail_failures_total',
      help: 'Failed attempts to send a mail (each retry counts; docs/self-service.md).',
      type: 'counter',
      collect: () => this.failures,
    });
    o.metrics?.register({
      name: 'throughway_mail_sent_total',
      help: 'Mails the mail server accepted.',
      type: 'counter',
      collect: () => this.sent,
    });
  }

  /** Whether mail of this channel has a server (`hostname` written). */
  configured(channel: MailChannel): boolean {
    return this.server(channel) !== undefined;
  }

  private server(channel: MailChannel): SmtpSettings | undefined {
    return channel === 'account' ? this.o.settings.account : this.o.settings.notification;
  }

  /** Starts reading the outbox every pollMs. */
  start(): void {
    if (this.timer !== undefined || this.closed) return;
    this.timer = setInterval(() => this.kick(), this.retry.pollMs);
    this.timer.unref();
    this.kick();
  }

  /**
   * Writes a mail to the outbox and starts sending it; resolves once it is stored, whatever the mail
   * server does. Undefined when its channel has no server (nothing is stored).
   */
  async send(m: OutgoingMail): Promise<MailRecord | undefined> {
    const server = this.server(MAIL_KINDS[m.kind]);
    if (server === undefined) return undefined;
    const signature = server.signature !== '' ? `\n\n-- \n${server.signature}` : '';
    const rec = await this.o.store.enqueueMail(
      {
        kind: m.kind,
        recipient: oneLine(m.to).slice(0, 320),
        subject: oneLine(m.subject),
        body: `${m.text}${signature}`.slice(0, MAX_BODY),
        ...(m.tenant !== undefined ? { tenant: m.tenant } : {}),
      },
      this.now(),
    );
    this.kick();
    return rec;
  }

  /** Runs a pass over the due mail now (another pass follows when one is running). */
  kick(): void {
    if (this.closed) return;
    if (this.running !== undefined) {
      this.again = true;
      return;
    }
    this.running = this.pass()
      .catch((err: unknown) => this.o.logger.log('error', 'mail_outbox_failed', { message: (err as Error).message }))
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Resolves when the pass running now (if any) is done. */
  async idle(): Promise<void> {
    while (this.running !== undefined) await this.running;
  }

  private async pass(): Promise<void> {
    const now = this.now();
    for (const m of await this.o.store.dueMails(now, 20)) {
      if (this.closed) return;
      // Taken for 5 minutes: another node skips it meanwhile; the attempt's outcome sets the next time.
      if (!(await this.o.store.claimMail(m.id, m.nextAt, now + 5 * 60_000))) continue;
      await this.attempt(m);
    }
  }

  private transport(channel: MailChannel, s: SmtpSettings): Transporter {
    let t = this.transports.get(channel);
    if (t === undefined) {
      const nodemailer = load<typeof import('nodemailer')>('nodemailer', `${s.source} hostname`);
      t = nodemailer.createTransport({
        host: s.hostname,
        port: s.port,
        // Port 465 is SMTP over TLS from the first byte (RFC 8314 §3.3); any other port starts in plain text.
        secure: s.port === 465,
        requireTLS: s.startTls,
        ignoreTLS: !s.startTls && s.port !== 465,
        ...(s.auth !== undefined ? { auth: { user: s.auth.user, pass: s.auth.pass } } : {}),
        tls: { rejectUnauthorized: true, ...(this.o.ca !== undefined ? { ca: [...this.o.ca] } : {}) },
        connectionTimeout: 10_000,
        greetingTimeout: 10_000,
        socketTimeout: 30_000,
      });
      this.transports.set(channel, t);
    }
    return t;
  }

  private async attempt(m: MailRecord): Promise<void> {
    const channel = MAIL_KINDS[m.kind as MailKind] ?? 'account';
    const s = this.server(channel);
    const attempts = m.attempts + 1;
    if (s === undefined) {
      await this.o.store.markMailAttempt(
        m.id,
        attempts,
        'failed',
        this.now(),
        'MAIL_NOT_CONFIGURED: no mail server is configured for this mail',
      );
      return;
    }
    try {
      await this.transport(channel, s).sendMail({ from: s.from, to: m.recipient, subject: m.subject, text: m.body });
      this.sent++;
      await this.o.store.markMailSent(m.id, this.now(), attempts);
      this.o.logger.log('info', 'mail_sent', { id: m.id, kind: m.kind, attempts });
    } catch (err) {
      this.failures++;
      const e = err as { code?: unknown; responseCode?: unknown; message?: unknown };
      const code = typeof e.code === 'string' ? e.code : 'MAIL_SEND_FAILED';
      const message = scrubSecret(String(e.message ?? err), s.auth);
      const last = attempts >= this.retry.attempts;
      const delay = Math.min(this.retry.maxMs, this.retry.baseMs * 2 ** (attempts - 1));
      await this.o.store.markMailAttempt(m.id, attempts, last ? 'failed' : 'pending', this.now() + delay, `${code}: ${message}`);
      this.o.logger.log(last ? 'error' : 'warn', 'mail_failed', {
        id: m.id,
        kind: m.kind,
        server: `${s.hostname}:${s.port}`,
        attempt: attempts,
        code,
        ...(typeof e.responseCode === 'number' ? { response_code: e.responseCode } : {}),
        message,
        ...(last ? { given_up: true } : { retry_in_ms: delay }),
      });
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
    for (const t of this.transports.values()) t.close();
    this.transports.clear();
  }
}
