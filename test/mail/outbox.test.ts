/**
 * The mail outbox (lib/mail/outbox.ts) against a real SMTP server on loopback (test/mail/smtp.ts): a mail
 * arrives; STARTTLS is required and AUTH used as `enable_start_tls` and `enable_authentication` say; a
 * refused password fails the attempt without the password in the log or the outbox, and counts a
 * failure; with the server down, send() still resolves, the attempts fail and are counted, and the mail
 * arrives once the server is back on its port.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import t, { type Test } from 'tap';
import { Mailer, scrubSecret } from '../../lib/mail/outbox';
import { mailSettings, type SmtpSettings } from '../../lib/mail/settings';
import { openDatabase, storeOver } from '../../lib/store/open';
import type { Store } from '../../lib/store/types';
import { makePki } from '../tls/helpers';
import { startSmtp } from './smtp';

async function tempStore(t: Test): Promise<Store> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-mail-'));
  const store = await storeOver(await openDatabase('apim_db', { type: 'h2', url: `jdbc:h2:${path.join(dir, 'db')}` }, dir));
  t.teardown(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return store;
}

function recorder(): {
  lines: { level: string; event: string; fields: Record<string, unknown> }[];
  logger: { level: 'info'; enabled: () => boolean; log: (level: string, event: string, fields?: Record<string, unknown>) => void };
} {
  const lines: { level: string; event: string; fields: Record<string, unknown> }[] = [];
  return {
    lines,
    logger: { level: 'info', enabled: () => true, log: (level, event, fields = {}) => void lines.push({ level, event, fields }) },
  };
}

const server = (port: number, extra: Partial<SmtpSettings> = {}): SmtpSettings => ({
  source: '[output_adapter.email]',
  hostname: 'localhost',
  port,
  from: 'portal@example.org',
  startTls: false,
  auth: undefined,
  signature: 'The API team',
  ...extra,
});

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

t.test(
  "the tables give the servers: account mail through [output_adapter.email], notifications through [apim.notifications], each the other's fallback",
  async (t) => {
    const email = {
      hostname: 'smtp.example.org',
      port: 587,
      from_address: 'a@example.org',
      username: 'u',
      password: 'p',
      enable_start_tls: true,
      enable_authentication: true,
      signature: 'S',
    };
    const none = { port: 25, enable_start_tls: false, enable_authentication: false, from_address: '<EMAIL>', password: '<PASSWORD>' };
    const s = mailSettings({ output_adapter: { email }, apim: { notifications: none } } as never);
    t.equal(s.account?.hostname, 'smtp.example.org');
    t.same(s.account?.auth, { user: 'u', pass: 'p' });
    t.equal(s.account?.startTls, true);
    t.equal(s.notification?.source, '[output_adapter.email]', 'notifications fall back to the account server');
    const neither = mailSettings({ output_adapter: { email: none }, apim: { notifications: none } } as never);
    t.equal(neither.account, undefined, 'no hostname: no server (the <EMAIL> placeholder is not an address)');
  },
);

t.test('a mail arrives, with the signature; STARTTLS and AUTH as the keys say', async (t) => {
  const pki = makePki();
  t.teardown(() => pki.cleanup());
  const smtp = await startSmtp({ auth: { user: 'mailer', pass: 's3cret-pw' }, tls: { key: pki.server.keyPem, cert: pki.server.certPem } });
  t.teardown(() => smtp.close());
  const store = await tempStore(t);
  const { logger, lines } = recorder();
  const registered: string[] = [];
  const mailer = new Mailer({
    store: store.selfService,
    settings: { account: server(smtp.port, { startTls: true, auth: { user: 'mailer', pass: 's3cret-pw' } }), notification: undefined },
    logger,
    ca: [pki.ca.certPem],
    metrics: { register: (m) => void registered.push(m.name) },
    retry: { baseMs: 100, pollMs: 100 },
  });
  t.teardown(() => mailer.close());
  t.same(registered, ['throughway_mail_failures_total', 'throughway_mail_sent_total'], 'the counters are registered');
  mailer.start();
  const rec = await mailer.send({
    kind: 'confirm',
    to: 'jane@example.org',
    subject: 'Hello\r\nBcc: evil@example.org',
    text: 'Confirm: https://portal/x',
  });
  t.ok(rec, 'stored');
  const m = await smtp.next();
  t.same(m.to, ['jane@example.org']);
  t.equal(m.from, 'portal@example.org');
  t.equal(m.subject, 'Hello Bcc: evil@example.org', 'a line break in the subject cannot add a header');
  t.match(m.text, /Confirm: https:\/\/portal\/x\r?\n\r?\n-- \r?\nThe API team/, 'the signature after the "-- " line');
  t.equal(m.secure, true, 'upgraded with STARTTLS');
  t.equal(m.user, 'mailer', 'AUTH with the username');
  await mailer.idle();
  t.equal((await store.selfService.listMails())[0]?.state, 'sent');
  t.equal(mailer.sent, 1);
  t.notOk(lines.some((l) => l.event === 'mail_failed'));

  // Without enable_start_tls the session stays in plain text (STARTTLS never tried), even when offered.
  const plain = await startSmtp({ tls: { key: pki.server.keyPem, cert: pki.server.certPem } });
  t.teardown(() => plain.close());
  const m2 = new Mailer({
    store: store.selfService,
    settings: { account: server(plain.port), notification: undefined },
    logger,
    retry: { pollMs: 100 },
  });
  t.teardown(() => m2.close());
  await m2.send({ kind: 'recover', to: 'joe@example.org', subject: 'Plain', text: 'x' });
  t.equal((await plain.next((x) => x.subject === 'Plain')).secure, false);
});

t.test('a refused password fails the attempt: logged and counted, the password nowhere', async (t) => {
  const pki = makePki();
  t.teardown(() => pki.cleanup());
  const smtp = await startSmtp({ auth: { user: 'mailer', pass: 'right-pw' }, tls: { key: pki.server.keyPem, cert: pki.server.certPem } });
  t.teardown(() => smtp.close());
  const store = await tempStore(t);
  const { logger, lines } = recorder();
  const mailer = new Mailer({
    store: store.selfService,
    settings: { account: server(smtp.port, { startTls: true, auth: { user: 'mailer', pass: 'wrong-pw-123' } }), notification: undefined },
    logger,
    ca: [pki.ca.certPem],
    retry: { baseMs: 60_000, pollMs: 50 },
  });
  t.teardown(() => mailer.close());
  await mailer.send({ kind: 'confirm', to: 'jane@example.org', subject: 'S', text: 'T' });
  const until = Date.now() + 10_000;
  while (mailer.failures === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  await mailer.idle();
  t.equal(mailer.failures, 1, 'one failure counted');
  const failed = lines.find((l) => l.event === 'mail_failed');
  t.equal(failed?.fields.code, 'EAUTH');
  t.equal(failed?.fields.retry_in_ms, 60_000, 'tried again after the back-off');
  const stored = (await store.selfService.listMails())[0];
  t.equal(stored?.state, 'pending');
  t.equal(stored?.attempts, 1);
  t.match(stored?.lastError, /^EAUTH: /);
  const everything = JSON.stringify(lines) + JSON.stringify(await store.selfService.listMails());
  t.notOk(everything.includes('wrong-pw-123'), 'the password is in no log line and no outbox row');
  t.notOk(everything.includes(Buffer.from('wrong-pw-123').toString('base64')), 'nor its base64');
  t.equal(smtp.messages.length, 0);
});

t.test('the server down: send() resolves, attempts fail with back-off, the mail arrives when the server is back', async (t) => {
  const port = await freePort();
  const store = await tempStore(t);
  const { logger, lines } = recorder();
  const mailer = new Mailer({
    store: store.selfService,
    settings: { account: server(port), notification: undefined },
    logger,
    retry: { baseMs: 200, maxMs: 400, pollMs: 50 },
  });
  t.teardown(() => mailer.close());
  mailer.start();
  const rec = await mailer.send({ kind: 'recover', to: 'jane@example.org', subject: 'Later', text: 'body' });
  t.ok(rec, 'the caller is answered at once: the mail is in the outbox');
  const until = Date.now() + 10_000;
  while (mailer.failures < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  t.ok(mailer.failures >= 2, 'attempts failed and were counted');
  const failed = lines.filter((l) => l.event === 'mail_failed');
  t.equal(failed[0]?.fields.code, 'ESOCKET');
  t.equal(failed[0]?.fields.retry_in_ms, 200, 'the first retry after baseMs');
  t.equal(failed[1]?.fields.retry_in_ms, 400, 'then doubling, at most maxMs');
  const smtp = await startSmtp({ port });
  t.teardown(() => smtp.close());
  const m = await smtp.next((x) => x.subject === 'Later');
  t.same(m.to, ['jane@example.org'], 'it arrived after the server came back');
  await mailer.idle();
  const stored = (await store.selfService.listMails())[0];
  t.equal(stored?.state, 'sent');
  t.ok((stored?.attempts ?? 0) >= 3);
});

t.test("a failure's text loses the password in every form AUTH sends it", async (t) => {
  const auth = { user: 'mailer', pass: 'pw-Secret-9' };
  const plain = Buffer.from('\u0000mailer\u0000pw-Secret-9').toString('base64');
  const said = `535 rejected pw-Secret-9 / ${Buffer.from('pw-Secret-9').toString('base64')} / AUTH PLAIN ${plain}\r\nnext line`;
  t.equal(scrubSecret(said, auth), '535 rejected **** / **** / AUTH PLAIN **** next line');
  t.equal(scrubSecret('x'.repeat(600), undefined).length, 500, 'bounded');
});
