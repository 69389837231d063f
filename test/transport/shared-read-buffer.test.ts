/**
 * Idle connections read into one buffer shared by the process (lib/transport/read-buffers.ts): every
 * read into it is copied out first, so bytes a connection keeps (pipelined requests queued, bodies
 * gathered, writes still pending) are never overwritten by another connection's read. These cases
 * interleave many connections whose reads land in the shared buffer while others keep bytes.
 */
import t from 'tap';
import { rawBackend } from '../helpers/backend';
import { RawClient } from '../helpers/client';
import { checkTransitions, startTransport } from '../helpers/transport';
import { nextSourceBuffer, ownBytes, SHARED_READ_BUFFER, SMALL_READ_BUFFER, type SourceBuffers } from '../../lib/transport/read-buffers';
import { TransportCore } from '../../lib/transport/core';

t.test('the buffer choice: idle reads take the shared buffer, which never reaches the spare list', async (t) => {
  const given: Buffer[] = [];
  const large = Buffer.alloc(128 * 1024);
  const core = { takeReadBuffer: () => large, giveReadBuffer: (b: Buffer) => given.push(b) } as unknown as TransportCore;
  const conn: SourceBuffers = { core, readBuf: null, retainRead: false, lastReadFull: false, inBody: false, clRemaining: 0 };
  t.equal(nextSourceBuffer(conn), SHARED_READ_BUFFER, 'an idle connection reads into the shared buffer');
  conn.retainRead = true; // views of the copy were kept
  t.equal(nextSourceBuffer(conn), SHARED_READ_BUFFER, 'still the shared buffer: what was kept is a copy');
  t.equal(given.length, 0, 'the shared buffer is never given to the spare list');
  (conn as { inBody: boolean }).inBody = true;
  t.equal(nextSourceBuffer(conn), large, 'a body streaming: a large buffer of its own');
  (conn as { inBody: boolean }).inBody = false;
  t.equal(nextSourceBuffer(conn), SHARED_READ_BUFFER, 'idle again: the shared one');
  t.same(given, [large], 'the large buffer went back');
  t.equal(SHARED_READ_BUFFER.length, SMALL_READ_BUFFER);
});

t.test('ownBytes copies a read of the shared buffer and views any other', async (t) => {
  SHARED_READ_BUFFER.write('hello', 0, 'latin1');
  const copy = ownBytes(SHARED_READ_BUFFER, 5);
  SHARED_READ_BUFFER.write('XXXXX', 0, 'latin1');
  t.equal(copy.toString('latin1'), 'hello', 'the copy keeps its bytes after the shared buffer is refilled');
  const other = Buffer.from('abcdef');
  const view = ownBytes(other, 3);
  t.equal(view.buffer, other.buffer, 'a connection-owned buffer is viewed, not copied');
  t.equal(view.toString(), 'abc');
  // A second read of the same length copies the bytes read then (the kept view of the shared buffer is a
  // view, not a snapshot), and the first copy stays as it was.
  const again = ownBytes(SHARED_READ_BUFFER, 5);
  t.equal(again.toString('latin1'), 'XXXXX');
  t.ok(again.buffer !== copy.buffer || again.byteOffset !== copy.byteOffset, 'a copy of its own');
  t.not(again.buffer, SHARED_READ_BUFFER.buffer, 'not a view of the shared buffer');
  t.equal(copy.toString('latin1'), 'hello');
  for (const n of [0, 1, SMALL_READ_BUFFER]) {
    SHARED_READ_BUFFER.fill(n & 0xff, 0, n);
    const c = ownBytes(SHARED_READ_BUFFER, n);
    t.equal(c.length, n);
    t.ok(c.every((b) => b === (n & 0xff)), `${n} bytes copied`);
  }
});

t.test('40 clients with pipelined requests and small bodies, interleaved: every answer matches its request', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, `${req.method} ${req.url} [${req.body.toString()}]`) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const clients = await Promise.all(Array.from({ length: 40 }, () => RawClient.connect(h.port)));
  t.teardown(() => clients.forEach((c) => c.destroy()));
  const expected: string[][] = clients.map(() => []);
  for (let round = 0; round < 4; round++) {
    // Each client sends three requests in one write: the second and third are queued by the
    // connection (kept bytes) while the other clients' reads go through the shared buffer.
    await Promise.all(
      clients.map((c, i) => {
        const body = `c${i}r${round}-${'x'.repeat((i * 37 + round * 11) % 300)}`;
        const reqs =
          `GET /c${i}/r${round}/a HTTP/1.1\r\nHost: a\r\n\r\n` +
          `POST /c${i}/r${round}/b HTTP/1.1\r\nHost: a\r\nContent-Length: ${body.length}\r\n\r\n${body}` +
          `POST /c${i}/r${round}/c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n${(3).toString(16)}\r\nend\r\n0\r\n\r\n`;
        expected[i]!.push(`GET /c${i}/r${round}/a []`, `POST /c${i}/r${round}/b [${body}]`, `POST /c${i}/r${round}/c [end]`);
        return c.write(reqs);
      }),
    );
    await Promise.all(clients.map((c, i) => c.message(expected[i]!.length, 10_000)));
  }
  let wrong = 0;
  clients.forEach((c, i) => {
    const got = c.responses.map((r) => r.body.toString('latin1'));
    if (JSON.stringify(got) !== JSON.stringify(expected[i])) wrong++;
  });
  t.equal(wrong, 0, 'all 480 answers in order, byte for byte');
  t.equal(h.faults.length, 0, 'no fault');
});

t.test('a pooled backend connection idle after small answers, then a large one: bytes intact', async (t) => {
  const big = Buffer.alloc(300 * 1024);
  for (let i = 0; i < big.length; i++) big[i] = (i * 31 + 7) & 0xff;
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, req.url === '/big' ? big : 'small') });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  for (let i = 0; i < 3; i++) {
    await c.write('GET /small HTTP/1.1\r\nHost: a\r\n\r\n');
    await c.message(i + 1, 5000);
  }
  await c.write('GET /big HTTP/1.1\r\nHost: a\r\n\r\n');
  await c.message(4, 10_000);
  await c.write('GET /small HTTP/1.1\r\nHost: a\r\n\r\n');
  await c.message(5, 5000);
  t.same(
    c.responses.map((r) => r.body.length),
    [5, 5, 5, big.length, 5],
    'five answers of the right sizes',
  );
  t.equal(Buffer.compare(c.responses[3]!.body, big), 0, 'the large answer arrived byte for byte');
  t.equal(backend.conns.length, 1, 'all on one pooled backend connection');
});

t.test('a backend connection serving queued exchanges back to back after small answers reads into the shared buffer', async (t) => {
  // 20 clients, one backend connection (maxConnectionsPerRoute 1): each answer is followed at once by the
  // next queued exchange on the same connection. Taking a large buffer for each made one per answer
  // wherever more connections were busy than buffers spare (3,448 of 128 KiB in 6 s at 1,000 clients).
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, `ok ${req.url}`) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { maxConnectionsPerRoute: 1 } });
  const proto = TransportCore.prototype as unknown as { takeReadBuffer(): Buffer };
  const take = proto.takeReadBuffer;
  let taken = 0;
  proto.takeReadBuffer = function (this: TransportCore): Buffer {
    taken++;
    return take.call(this);
  };
  t.teardown(() => {
    proto.takeReadBuffer = take;
  });
  const clients = await Promise.all(Array.from({ length: 20 }, () => RawClient.connect(h.port)));
  t.teardown(() => clients.forEach((c) => c.destroy()));
  for (let round = 1; round <= 5; round++) {
    await Promise.all(clients.map((c, i) => c.write(`GET /${i}/${round} HTTP/1.1\r\nHost: a\r\n\r\n`)));
    await Promise.all(clients.map((c) => c.message(round, 5000)));
  }
  t.same(
    clients.map((c) => c.responses.map((r) => r.body.toString())),
    clients.map((_, i) => [1, 2, 3, 4, 5].map((r) => `ok /${i}/${r}`)),
    'every client got its own five answers',
  );
  t.equal(backend.conns.length, 1, 'one backend connection served all 100');
  // The one at connect, before the first answer told how large answers are; none after.
  t.ok(taken <= 1, `large read buffers taken while serving 100 small answers: ${taken}`);
});

t.test('teardown', async (t) => checkTransitions(t));
