/**
 * The mail servers of spec 000's e-mail tables (docs/self-service.md, "E-mail"): `[output_adapter.email]`
 * sends the account mail (sign-up confirmation, password recovery), `[apim.notifications]` the
 * notifications (a new version of a subscribed API). Both have the same keys; a table without `hostname`
 * sends nothing, and the account mail falls back to `[apim.notifications]` when only that one is written
 * (and the other way round), so one mail server configured serves both.
 */
import type { DeploymentConfig } from '../config/deployment-config.generated';

/** One table's keys, read once. */
export interface SmtpSettings {
  /** The table, for logs and errors: `[output_adapter.email]` or `[apim.notifications]`. */
  readonly source: string;
  readonly hostname: string;
  readonly port: number;
  readonly from: string;
  /** `enable_start_tls`: STARTTLS is required (RFC 3207); the server's certificate is verified. */
  readonly startTls: boolean;
  /** `enable_authentication`: AUTH (RFC 4954) with username and password. */
  readonly auth: { readonly user: string; readonly pass: string } | undefined;
  /** `signature`: appended to every mail's body after a `-- ` line (RFC 3676 §4.3). */
  readonly signature: string;
}

/** Which mail server a kind of mail goes through. */
export type MailChannel = 'account' | 'notification';

export interface MailSettings {
  readonly account: SmtpSettings | undefined;
  readonly notification: SmtpSettings | undefined;
}

type EmailTable = DeploymentConfig['output_adapter']['email'];

/** A placeholder the spec shows as a default (`<EMAIL>`, `<PASSWORD>`) counts as not written. */
const written = (v: string | undefined): string | undefined => (v === undefined || v === '' || /^<[A-Z_]+>$/.test(v) ? undefined : v);

export function smtpSettings(t: EmailTable, source: string): SmtpSettings | undefined {
  const hostname = written(t.hostname);
  if (hostname === undefined) return undefined;
  const from = written(t.from_address) ?? `throughway@${hostname}`;
  const user = written(t.username) ?? from;
  return {
    source,
    hostname,
    port: t.port,
    from,
    startTls: t.enable_start_tls,
    auth: t.enable_authentication ? { user, pass: written(t.password) ?? '' } : undefined,
    signature: t.signature ?? '',
  };
}

export function mailSettings(config: DeploymentConfig): MailSettings {
  const account = smtpSettings(config.output_adapter.email, '[output_adapter.email]');
  const notification = smtpSettings(config.apim.notifications, '[apim.notifications]');
  return { account: account ?? notification, notification: notification ?? account };
}
