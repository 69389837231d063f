/**
 * One client address cannot fill the management port (docs/security.md, "The management port"): at most
 * `[throughway.management] max_connections_per_address` open connections come from one address (a tenth
 * of max_connections unless written); the next from it is closed at once while another address still
 * gets a token. A connection that sends nothing is closed after the head timeout, over HTTP and HTTPS.
 *
 * Other client addresses: every 127.x.y.z address is loopback on Linux, so a socket bound to 127.0.0.2
 * comes from another address than one bound to 127.0.0.3.
 */
import * as net from 'node:net';
import * as tls from 'node:tls';
import t from 'tap';
import { addressKey } from '../../lib/keymanager/listener';
import { selfSigned } from '../../lib/tls/sample';
import { appWithKeys, startKeyManager } from './helpers';

/** A TCP connection from `from` to 127.0.0.1:port, resolved once connected. */
function connect(port: number, from: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ port, host: '127.0.0.1', localAddress: from }, () => resolve(s));
    s.once('error', reject);
  });
}

/** Resolves when the server closes the socket, with the bytes it answered. */
function closed(s: net.Socket): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('error', () => undefined);
    s.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
}

/** A client_credentials token request on a fresh connection from `from`: the status line and body. */
async function tokenFrom(port: number, from: string, key: string, secret: string): Promise<string> {
  const s = await connect(port, from);
  const done = closed(s);
  const body = 'grant_type=client_credentials';
  s.write(
    `POST /oauth2/token HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  );
  return done;
}

t.test('one address holding its share of idle connections is refused more; another address still gets a token', async (t) => {
  const h = await startKeyManager('[throughway.management]\nmax_connections = 50\nmax_connections_per_address = 5\n');
  t.teardown(() => h.close());
  const port = Number(new URL(h.url).port);
  const app = await appWithKeys(h, 'ShareApp');

  const held: net.Socket[] = [];
  t.teardown(() => held.forEach((s) => s.destroy()));
  // Idle: connected, nothing sent. The server accepts in order, so these five are counted before the sixth.
  for (let i = 0; i < 5; i++) held.push(await connect(port, '127.0.0.3'));
  const sixth = await connect(port, '127.0.0.3');
  const answer = closed(sixth);
  sixth.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
  t.equal(await answer, '', 'the sixth connection from the same address is closed without an answer');

  const other = await tokenFrom(port, '127.0.0.2', app.key, app.secret);
  t.match(other, /^HTTP\/1\.1 200 /, 'another address gets a token meanwhile');
  t.match(other, /"access_token":"/);
  t.match(h.logLines.join('\n'), /"address":"127\.0\.0\.3".*"event":"management_address_full"/, 'the filling is logged with the address');
  t.equal(h.logLines.filter((l) => l.includes('management_address_full')).length, 1, 'once, not per refused connection');
});

t.test('the default share is a tenth of max_connections', async (t) => {
  const h = await startKeyManager('[throughway.management]\nmax_connections = 30\n');
  t.teardown(() => h.close());
  const port = Number(new URL(h.url).port);
  const held: net.Socket[] = [];
  t.teardown(() => held.forEach((s) => s.destroy()));
  for (let i = 0; i < 3; i++) held.push(await connect(port, '127.0.0.5'));
  const fourth = await connect(port, '127.0.0.5');
  const answer = closed(fourth);
  fourth.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
  t.equal(await answer, '', 'the fourth from one address is closed (30 / 10 = 3)');
  const s = await connect(port, '127.0.0.6');
  const ok = closed(s);
  s.write('GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  t.match(await ok, /^HTTP\/1\.1 200 /, 'another address is served');
});

t.test('a connection that sends nothing is closed after the head timeout (HTTP, and HTTPS before the handshake)', async (t) => {
  const h = await startKeyManager('[throughway.management]\nheader_timeout = 300\nrequest_timeout = 600\n');
  t.teardown(() => h.close());
  const silent = await connect(Number(new URL(h.url).port), '127.0.0.7');
  t.match(await closed(silent), /^(HTTP\/1\.1 408|)/, 'a silent HTTP connection is closed');

  const pair = selfSigned('localhost', ['localhost', '127.0.0.1']);
  const secure = await h.km.listenHttps({ key: pair.keyPem, cert: pair.certPem }, 0, '127.0.0.1');
  const port = (secure.address() as net.AddressInfo).port;
  const raw = await connect(port, '127.0.0.7');
  t.equal(await closed(raw), '', 'a TCP connection that never starts TLS is closed');
  // A completed handshake, then silence: the head timeout closes it too.
  const s = tls.connect({ socket: await connect(port, '127.0.0.7'), rejectUnauthorized: false });
  await new Promise<void>((resolve, reject) => {
    s.once('secureConnect', () => resolve());
    s.once('error', reject);
  });
  t.match(await closed(s), /^(HTTP\/1\.1 408|)/, 'a silent TLS connection is closed');
});

t.test('addresses are counted as IPv4, or by their IPv6 /64', async (t) => {
  t.equal(addressKey('192.0.2.7'), '192.0.2.7');
  t.equal(addressKey('::ffff:192.0.2.7'), '192.0.2.7', 'an IPv4-mapped address is its IPv4 address');
  t.equal(addressKey('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64');
  t.equal(addressKey('2001:db8:1:2::9'), '2001:db8:1:2::/64', 'the same /64 after ::');
  t.equal(addressKey('2001:0db8::1'), '2001:db8:0:0::/64', ':: inside the prefix, leading zeros dropped');
  t.equal(addressKey('::1'), '0:0:0:0::/64');
  t.equal(addressKey('fe80::1%eth0'), 'fe80:0:0:0::/64', 'a zone index is dropped');
});
