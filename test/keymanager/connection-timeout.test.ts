/**
 * `[transport.http.properties] connectionTimeout` (the reference's connector attribute, which its
 * deployment.toml files write) bounds the request head on the management listener in place of
 * `[throughway.management] header_timeout` (docs/security.md).
 */
import * as net from 'node:net';
import t from 'tap';
import { startKeyManager } from './helpers';

/** What the socket saw: 'closed' (with the bytes answered) or 'open' still after `ms`. */
function outcome(s: net.Socket, ms: number): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => resolve('open'), ms);
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('error', () => undefined);
    s.on('close', () => {
      clearTimeout(timer);
      resolve(`closed ${Buffer.concat(chunks).toString('latin1')}`);
    });
  });
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

t.test('a partial head is closed after connectionTimeout, though header_timeout is ten minutes', async (t) => {
  const h = await startKeyManager('[throughway.management]\nheader_timeout = 600000\nrequest_timeout = 600000\n[transport.http.properties]\nconnectionTimeout = 300\n');
  t.teardown(() => h.close());
  const s = await connect(Number(new URL(h.url).port));
  t.teardown(() => s.destroy());
  const seen = outcome(s, 20_000);
  s.write('GET /health HTTP/1.1\r\nHost: x\r\n');
  // Without connectionTimeout the head would be waited for ten minutes: 'open' after 20 s is the failure.
  t.match(await seen, /^closed (HTTP\/1\.1 408|)/);
});

t.test('without connectionTimeout, header_timeout bounds the head', async (t) => {
  const h = await startKeyManager('[throughway.management]\nheader_timeout = 300\nrequest_timeout = 600000\n');
  t.teardown(() => h.close());
  const s = await connect(Number(new URL(h.url).port));
  t.teardown(() => s.destroy());
  const seen = outcome(s, 20_000);
  s.write('GET /health HTTP/1.1\r\nHost: x\r\n');
  t.match(await seen, /^closed (HTTP\/1\.1 408|)/);
});
