/**
 * Idle connections read into one buffer shared by the process (lib/transport/read-buffers.ts): a read
 * into it is parsed where it lies, and the bytes a connection keeps (pipelined requests queued, bodies
 * gathered or written) are copied out first, so they are never overwritten by another connection's read.
 * These cases interleave many connections whose reads land in the shared buffer while others keep bytes,
 * and check that no write is handed a view of the shared buffer.
 */
import t, { type Test } from 'tap';
import { Socket } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { rawBackend } from '../helpers/backend';
import { RawClient } from '../helpers/client';
import { checkTransitions, startTransport } from '../helpers/transport';
import {
  keptBytes,
  nextSourceBuffer,
  ownBytes,
  sharedRead,
  SHARED_READ_BUFFER,
  SMALL_READ_BUFFER,
  spanOf,
  type SourceBuffers,
} from '../../lib/transport/read-buffers';
import { defaultRenderFault, SPARE_READ_BYTES, TransportCore } from '../../lib/transport/core';
import { DEFAULT_TRANSPORT_SETTINGS, resolveSettings } from '../../lib/transport/settings';
import { silentLogger } from '../../lib/log';
import { targetFromUrl, type RouteFn } from '../../lib/transport';
import { HOST } from '../helpers/client';

t.test('the buffer choice: idle reads take the shared buffer, which never reaches the spare list', async (t) => {
  const given: Buffer[] = [];
  const large = Buffer.alloc(128 * 1024);
  const core = { takeReadBuffer: () => large, giveReadBuffer: (b: Buffer) => given.push(b) } as unknown as TransportCore;
  const conn: SourceBuffers = { core, readBuf: null, retainRead: false, lastReadFull: false, bodyInProgress: false };
  t.equal(nextSourceBuffer(conn), SHARED_READ_BUFFER, 'an idle connection reads into the shared buffer');
  conn.retainRead = true; // views of the copy were kept
  t.equal(nextSourceBuffer(conn), SHARED_READ_BUFFER, 'still the shared buffer: what was kept is a copy');
  t.equal(given.length, 0, 'the shared buffer is never given to the spare list');
  (conn as { bodyInProgress: boolean }).bodyInProgress = true;
  t.equal(nextSourceBuffer(conn), large, 'a body streaming: a large buffer of its own');
  (conn as { bodyInProgress: boolean }).bodyInProgress = false;
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
    t.ok(
      c.every((b) => b === (n & 0xff)),
      `${n} bytes copied`,
    );
  }
});

t.test('a read into the shared buffer is viewed where it lies; keptBytes copies what is kept of it', async (t) => {
  SHARED_READ_BUFFER.write('hello world', 0, 'latin1');
  const read = sharedRead(11);
  t.equal(read.buffer, SHARED_READ_BUFFER.buffer, 'a view of the shared buffer, no copy');
  t.equal(read.toString('latin1'), 'hello world');
  t.equal(sharedRead(11), read, 'one kept view per length: nothing made per read');
  const whole = keptBytes(read, 0, 11);
  const tail = keptBytes(read, 6, 11);
  const middle = keptBytes(read, 2, 5);
  SHARED_READ_BUFFER.write('XXXXXXXXXXX', 0, 'latin1');
  t.equal(read.toString('latin1'), 'XXXXXXXXXXX', 'the view shows the next read');
  t.equal(whole.toString('latin1'), 'hello world', 'what was kept survives the next read into the shared buffer');
  t.equal(tail.toString('latin1'), 'world');
  t.equal(middle.toString('latin1'), 'llo');
  for (const k of [whole, tail, middle]) t.not(k.buffer, SHARED_READ_BUFFER.buffer, 'a copy of its own');
  const other = Buffer.from('abcdef');
  t.equal(keptBytes(other, 0, 6), other, "a connection's own read is kept as it is");
  const view = keptBytes(other, 2, 4);
  t.equal(view.buffer, other.buffer, 'a part of it is a view');
  t.equal(view.toString(), 'cd');
  // A Buffer of the same length that is not the shared read is not mistaken for it.
  const lookalike = Buffer.alloc(11, 0x41);
  t.equal(keptBytes(lookalike, 0, 11), lookalike);
  for (const n of [0, 1, SMALL_READ_BUFFER]) {
    SHARED_READ_BUFFER.fill(n & 0xff, 0, n);
    const r = sharedRead(n);
    t.equal(r.length, n);
    const k = keptBytes(r, 0, n);
    SHARED_READ_BUFFER.fill(0xee, 0, n);
    t.ok(k.length === n && k.every((b) => b === (n & 0xff)), `${n} bytes kept`);
  }
});

t.test('spanOf: the bytes of a read between two offsets, viewed where they lie', async (t) => {
  SHARED_READ_BUFFER.write('HTTP/1.1 200 OK\r\n\r\n{"ok":true}', 0, 'latin1');
  const read = sharedRead(30);
  const body = spanOf(read, 19, 30);
  t.equal(Buffer.from(body).toString('latin1'), '{"ok":true}', 'a shared read: the body after its head');
  t.equal(body.buffer, SHARED_READ_BUFFER.buffer, 'a view of the shared buffer');
  t.equal(body.byteOffset, SHARED_READ_BUFFER.byteOffset + 19, 'at the body');
  t.equal(spanOf(read, 0, 0).length, 0, 'an empty span');
  t.equal(Buffer.from(spanOf(read, 29, 30)).toString('latin1'), '}', 'the last byte');
  // Another read of the same length, in a buffer of its own at an offset of its backing memory.
  const backing = Buffer.alloc(64, 0x2e);
  backing.write('HTTP/1.1 200 OK\r\n\r\n{"no":false', 10, 'latin1');
  const own = backing.subarray(10, 40);
  const span = spanOf(own, 19, 30);
  t.equal(Buffer.from(span).toString('latin1'), '{"no":false', "a read of its own: its bytes, not the shared buffer's");
  t.equal(span.buffer, backing.buffer, 'a view of that read');
  // A Buffer of the same length that is not the shared read is not mistaken for it.
  const lookalike = Buffer.alloc(30, 0x41);
  t.equal(Buffer.from(spanOf(lookalike, 2, 5)).toString('latin1'), 'AAA');
});

/**
 * Every Buffer the transport hands to a socket write, through its direct writes (direct-write.ts, called
 * through the module object) and through Socket.write: the ones that view the shared read buffer.
 * writeJoined() joins its bytes into a buffer of its own before writing: counted, not looked at.
 */
function sharedWrites(t: Test): { count: () => number; writes: () => number } {
  const dw = require('../../lib/transport/direct-write') as {
    writeBuffer: (s: Socket, b: Buffer) => boolean;
    writeHeadAndBody: (s: Socket, h: string, b: Buffer) => boolean;
    writeJoined: (s: Socket, h: string, b: Uint8Array) => boolean;
  };
  const realBuffer = dw.writeBuffer;
  const realHeadAndBody = dw.writeHeadAndBody;
  const realJoined = dw.writeJoined;
  const realWrite = Socket.prototype.write;
  let shared = 0;
  let writes = 0;
  const look = (b: unknown): void => {
    writes++;
    if (b instanceof Uint8Array && b.buffer === SHARED_READ_BUFFER.buffer) shared++;
  };
  dw.writeBuffer = (s, b) => {
    look(b);
    return realBuffer(s, b);
  };
  dw.writeHeadAndBody = (s, h, b) => {
    look(b);
    return realHeadAndBody(s, h, b);
  };
  // writeJoined copies its body before it returns: a view of a shared read is what it may be given.
  dw.writeJoined = (s, h, b) => {
    writes++;
    return realJoined(s, h, b);
  };
  Socket.prototype.write = function (this: Socket, ...args: unknown[]): boolean {
    look(args[0]);
    return (realWrite as (...a: unknown[]) => boolean).apply(this, args);
  };
  t.teardown(() => {
    dw.writeBuffer = realBuffer;
    dw.writeHeadAndBody = realHeadAndBody;
    dw.writeJoined = realJoined;
    Socket.prototype.write = realWrite;
  });
  return { count: () => shared, writes: () => writes };
}

t.test('no write is handed a view of the shared buffer: request bodies, chunked and de-chunked answers', async (t) => {
  const backend = await rawBackend({
    onRequest: (c, req) => {
      if (req.url.startsWith('/chunked')) {
        // Head and several chunks in one write: the transport reads them in one read.
        c.write(
          Buffer.from(
            `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n${req.url.slice(-5)}\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n`,
            'latin1',
          ),
        );
      } else c.respond(200, `${req.method} ${req.url} [${req.body.toString()}]`);
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const watch = sharedWrites(t);
  const clients = await Promise.all(Array.from({ length: 12 }, () => RawClient.connect(h.port)));
  t.teardown(() => clients.forEach((c) => c.destroy()));
  const expected: string[][] = clients.map(() => []);
  const dechunked: string[][] = clients.map(() => []);
  for (let round = 0; round < 3; round++) {
    await Promise.all(
      clients.map(async (c, i) => {
        const body = `c${i}r${round}`;
        const id = `${i % 10}${round}${'xyz'[i % 3]}${i % 7}${round}`;
        if (i % 3 === 0) {
          // HTTP/1.0: the chunked answer is de-chunked (its body written from the parser's spans) and
          // delimited by the close (RFC 9112 §7.1): a connection per request.
          const once = await RawClient.connect(h.port);
          await once.write(`GET /chunked/${id} HTTP/1.0\r\nHost: a\r\n\r\n`);
          await once.message(1, 5000);
          dechunked[i]!.push(once.responses[0]!.body.toString('latin1'));
          once.destroy();
          expected[i]!.push(`${id}abcdef`);
          return;
        } else if (i % 3 === 1) {
          await c.write(`GET /chunked/${id} HTTP/1.1\r\nHost: a\r\n\r\n`);
          expected[i]!.push(`${id}abcdef`);
        } else {
          // A small body in the head's read, with Content-Length and chunked.
          await c.write(`POST /cl/${i} HTTP/1.1\r\nHost: a\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
          await c.message(expected[i]!.length + 1, 5000);
          expected[i]!.push(`POST /cl/${i} [${body}]`);
          await c.write(
            `POST /te/${i} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
          );
          expected[i]!.push(`POST /te/${i} [${body}]`);
        }
        await c.message(expected[i]!.length, 5000);
      }),
    );
  }
  t.same(
    clients.map((c, i) => (i % 3 === 0 ? dechunked[i] : c.responses.map((r) => r.body.toString('latin1')))),
    expected,
    'every answer byte for byte',
  );
  t.ok(watch.writes() > 100, `writes seen: ${watch.writes()}`);
  t.equal(watch.count(), 0, 'none of them views the shared read buffer');
  t.equal(h.faults.length, 0, 'no fault');
});

t.test('a request read while the one before is still answered waits as a copy of its own', async (t) => {
  // /slow answers after 60 ms; meanwhile each waiting client's next request arrives in a read of its own
  // (queued: the connection is blocked) and other clients' reads go through the shared buffer.
  const backend = await rawBackend({
    onRequest: (c, req) => {
      if (req.url.startsWith('/slow')) setTimeout(() => c.respond(200, `slow ${req.url}`), 60);
      else c.respond(200, `fast ${req.url}`);
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const waiting = await Promise.all(Array.from({ length: 8 }, () => RawClient.connect(h.port)));
  const noisy = await Promise.all(Array.from({ length: 8 }, () => RawClient.connect(h.port)));
  t.teardown(() => [...waiting, ...noisy].forEach((c) => c.destroy()));
  await Promise.all(waiting.map((c, i) => c.write(`GET /slow/${i} HTTP/1.1\r\nHost: a\r\n\r\n`)));
  await new Promise((r) => setTimeout(r, 15));
  await Promise.all(waiting.map((c, i) => c.write(`GET /next/${i}/${'q'.repeat(i * 13)} HTTP/1.1\r\nHost: a\r\n\r\n`)));
  for (let round = 0; round < 5; round++) {
    await Promise.all(noisy.map((c, i) => c.write(`GET /noise/${'n'.repeat(i * 17)}/${round} HTTP/1.1\r\nHost: a\r\n\r\n`)));
    await Promise.all(noisy.map((c) => c.message(round + 1, 5000)));
  }
  await Promise.all(waiting.map((c) => c.message(2, 5000)));
  t.same(
    waiting.map((c) => c.responses.map((r) => r.body.toString('latin1'))),
    waiting.map((_, i) => [`slow /slow/${i}`, `fast /next/${i}/${'q'.repeat(i * 13)}`]),
    'each waiting request reached the backend as it was sent',
  );
  t.equal(h.faults.length, 0, 'no fault');
});

t.test("a body gathered for the router (readBody) from reads between other clients' keeps its bytes", async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, `[${req.body.toString('latin1')}]`) });
  t.teardown(() => backend.close());
  const target = targetFromUrl(backend.url);
  // The router gathers each POST's body before it decides (as mediation does), then sends it on.
  const route: RouteFn = async (req) => {
    if (req.method !== 'POST' || req.readBody === undefined) return { target };
    const body = await req.readBody(4096);
    return body.ok ? { target, body: body.body } : { target };
  };
  const h = await startTransport(t, route);
  const posting = await Promise.all(Array.from({ length: 6 }, () => RawClient.connect(h.port)));
  const noisy = await Promise.all(Array.from({ length: 6 }, () => RawClient.connect(h.port)));
  t.teardown(() => [...posting, ...noisy].forEach((c) => c.destroy()));
  const pieces = (i: number): string[] => [0, 1, 2, 3].map((k) => `p${i}k${k}-${String.fromCharCode(97 + i + k).repeat(9 + i)}`);
  const length = (i: number): number => pieces(i).join('').length;
  // The head and the first piece in one read (into the shared buffer: the connection is idle), the
  // other pieces in reads of their own after other clients' reads.
  await Promise.all(
    posting.map((c, i) => c.write(`POST /gather/${i} HTTP/1.1\r\nHost: a\r\nContent-Length: ${length(i)}\r\n\r\n${pieces(i)[0]!}`)),
  );
  for (let k = 1; k < 4; k++) {
    await new Promise((r) => setTimeout(r, 10));
    await Promise.all(posting.map((c, i) => c.write(pieces(i)[k]!)));
    // Other clients' reads go through the shared buffer between the pieces.
    await Promise.all(noisy.map((c, i) => c.write(`GET /noise/${'z'.repeat(40 + i * 23)}/${k} HTTP/1.1\r\nHost: a\r\n\r\n`)));
    await Promise.all(noisy.map((c) => c.message(k, 5000)));
  }
  await Promise.all(posting.map((c) => c.message(1, 5000)));
  t.same(
    posting.map((c) => c.responses[0]?.body.toString('latin1')),
    posting.map((_, i) => `[${pieces(i).join('')}]`),
    'each gathered body reached the backend byte for byte',
  );
  t.equal(h.faults.length, 0, 'no fault');
});

t.test('no write is handed a view of the shared buffer: a WebSocket tunnel', async (t) => {
  const server = new WebSocketServer({ host: HOST, port: 0 });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const c of server.clients) c.terminate();
        server.close(() => resolve());
      }),
  );
  // Frames the backend sends on its own, right after the handshake and between echoes.
  server.on('connection', (ws) => {
    ws.send('hello');
    ws.on('message', (data) => ws.send(`echo ${data.toString()}`));
  });
  const target = targetFromUrl(`http://${HOST}:${(server.address() as { port: number }).port}`);
  const route: RouteFn = (req) => (req.upgrade === true ? { target, websocket: {} } : { target });
  const h = await startTransport(t, route);
  const watch = sharedWrites(t);
  const got: string[] = [];
  const ws = new WebSocket(`ws://${HOST}:${h.port}/ws`);
  t.teardown(() => ws.terminate());
  ws.on('message', (data) => got.push(data.toString()));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  for (let i = 0; i < 20; i++) ws.send(`m${i}`);
  const deadline = Date.now() + 5000;
  while (got.length < 21 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  t.same(got, ['hello', ...Array.from({ length: 20 }, (_, i) => `echo m${i}`)], 'every frame, in order');
  t.ok(watch.writes() >= 21, `writes seen: ${watch.writes()}`);
  t.equal(watch.count(), 0, 'none of them views the shared read buffer');
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

t.test('read buffers: 256 KiB by default, and the spare list holds at most SPARE_READ_BYTES of them', async (t) => {
  t.equal(DEFAULT_TRANSPORT_SETTINGS.readBufferSize, 256 * 1024, 'the default read_buffer_size (docs/transport.md, "Read buffers")');
  const coreOf = (readBufferSize?: number): TransportCore =>
    new TransportCore(
      resolveSettings(readBufferSize === undefined ? {} : { readBufferSize }),
      () => undefined,
      defaultRenderFault,
      silentLogger,
      {},
      () => {
        throw new Error('no connection in this test');
      },
    );
  // Gives n buffers back, then takes n: the spare list answers LIFO with what it kept, then allocates.
  const keptOf = (core: TransportCore, size: number, n: number): number => {
    const given = Array.from({ length: n }, () => Buffer.allocUnsafeSlow(size));
    for (const b of given) core.giveReadBuffer(b);
    const mine = new Set<Buffer>(given);
    let kept = 0;
    for (let i = 0; i < n; i++) {
      const b = core.takeReadBuffer();
      t.equal(b.length, size, 'a buffer of read_buffer_size');
      if (mine.has(b)) kept++;
    }
    return kept;
  };
  t.equal(keptOf(coreOf(), 256 * 1024, 70), SPARE_READ_BYTES / (256 * 1024), '64 spare buffers at the default size');
  t.equal(keptOf(coreOf(4 * 1024 * 1024), 4 * 1024 * 1024, 10), 4, 'four of 4 MiB: 16 MiB in all');
  t.equal(keptOf(coreOf(64 * 1024 * 1024), 64 * 1024 * 1024, 3), 1, 'at least one, however large');
  t.equal(keptOf(coreOf(128 * 1024), 128 * 1024, 140), 128, '128 of 128 KiB');
});

t.test('teardown', async (t) => checkTransitions(t));
