/**
 * A real SMTP server for the mail tests: the `smtp-server` package (a dev dependency) on a loopback port,
 * keeping every message it accepts (envelope, headers, the text body with quoted-printable decoded),
 * with STARTTLS and AUTH when asked. Started and stopped by each test.
 */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface Received {
  readonly from: string;
  readonly to: readonly string[];
  readonly subject: string;
  readonly text: string;
  /** The session was upgraded with STARTTLS. */
  readonly secure: boolean;
  /** The AUTH user, if any. */
  readonly user: string | undefined;
}

export interface TestSmtp {
  readonly port: number;
  readonly messages: Received[];
  /** Resolves with the first message (after `skip` of them) that matches, or rejects after `ms`. */
  next(match?: (m: Received) => boolean, ms?: number): Promise<Received>;
  close(): Promise<void>;
}

/** Quoted-printable (RFC 2045 §6.7) decoded: soft line breaks joined, =XX bytes as UTF-8. */
export function decodeQuotedPrintable(s: string): string {
  const joined = s.replace(/=\r?\n/g, '');
  const bytes: number[] = [];
  for (let i = 0; i < joined.length; i++) {
    const m = /^=([0-9A-F]{2})/.exec(joined.slice(i, i + 3));
    if (m !== null) {
      bytes.push(parseInt(m[1] as string, 16));
      i += 2;
    } else bytes.push(...Buffer.from(joined[i] as string));
  }
  return Buffer.from(bytes).toString('utf8');
}

function parse(raw: string, envelope: { from: string; to: string[] }, secure: boolean, user: string | undefined): Received {
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, ' ');
  const body = raw.slice(split + 4);
  const header = (name: string): string => new RegExp(`^${name}:\\s*(.*)$`, 'im').exec(head)?.[1]?.trim() ?? '';
  const cte = header('Content-Transfer-Encoding').toLowerCase();
  const text =
    cte === 'quoted-printable' ? decodeQuotedPrintable(body) : cte === 'base64' ? Buffer.from(body, 'base64').toString('utf8') : body;
  return { from: envelope.from, to: envelope.to, subject: header('Subject'), text, secure, user };
}

export async function startSmtp(
  o: { port?: number; auth?: { user: string; pass: string }; tls?: { key: string; cert: string } } = {},
): Promise<TestSmtp> {
  const messages: Received[] = [];
  const waiters: { match: (m: Received) => boolean; resolve: (m: Received) => void }[] = [];
  const server = new SMTPServer({
    secure: false,
    ...(o.tls !== undefined ? { key: o.tls.key, cert: o.tls.cert } : {}),
    disabledCommands: [...(o.tls === undefined ? ['STARTTLS'] : []), ...(o.auth === undefined ? ['AUTH'] : [])],
    authOptional: o.auth === undefined,
    allowInsecureAuth: o.tls === undefined,
    logger: false,
    onAuth(auth, _session, cb) {
      if (o.auth !== undefined && auth.username === o.auth.user && auth.password === o.auth.pass) return cb(null, { user: auth.username });
      return cb(new Error('Invalid username or password'));
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const env = {
          from: session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address,
          to: session.envelope.rcptTo.map((r) => r.address),
        };
        const m = parse(
          Buffer.concat(chunks).toString('utf8'),
          env,
          session.secure,
          typeof session.user === 'string' ? session.user : undefined,
        );
        messages.push(m);
        for (const w of [...waiters]) {
          if (w.match(m)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(m);
          }
        }
        cb();
      });
    },
  });
  server.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    messages,
    next(match = () => true, ms = 15_000) {
      const found = messages.find(match);
      if (found !== undefined) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const w = {
          match,
          resolve: (m: Received) => {
            clearTimeout(timer);
            resolve(m);
          },
        };
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(w), 1);
          reject(new Error(`no matching mail within ${ms} ms (got ${messages.length})`));
        }, ms);
        waiters.push(w);
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The first link of a mail's text whose path starts with `pathPrefix` (`/devportal/confirm?token=`), as a URL. */
export function linkIn(m: Received, pathPrefix: string): URL {
  const found = /https?:\/\/\S+/g;
  for (const x of m.text.matchAll(found)) {
    const u = new URL(x[0]);
    if (`${u.pathname}${u.search}`.startsWith(pathPrefix)) return u;
  }
  throw new Error(`no ${pathPrefix} link in: ${m.text}`);
}

/** A mailed link on another origin of the same server (the test speaks plain HTTP to the management port). */
export const at = (base: string, u: URL): string => `${base}${u.pathname}${u.search}`;
