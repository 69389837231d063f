/**
 * Writes straight to the socket's handle (lib/transport/direct-write.ts): order kept with stream writes,
 * backpressure reported and 'drain' emitted, failures surface as socket errors, TLS and corked sockets
 * take socket.write().
 */
import t, { type Test } from 'tap';
import * as net from 'node:net';
import { once } from 'node:events';
import {
  directWrites,
  handleOf,
  JOIN_SIZE,
  writeBlocked,
  writeBuffer,
  writeHeadAndBody,
  writeJoined,
  writeLatin1,
  writesPending,
  type DirectHandle,
} from '../../lib/transport/direct-write';

async function pair(): Promise<{ client: net.Socket; server: net.Socket; close: () => void }> {
  const srv = net.createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const port = (srv.address() as net.AddressInfo).port;
  const accepted = once(srv, 'connection') as Promise<[net.Socket]>;
  const client = net.connect(port, '127.0.0.1');
  await once(client, 'connect');
  const [server] = await accepted;
  return {
    client,
    server,
    close: () => {
      client.destroy();
      server.destroy();
      srv.close();
    },
  };
}

/** Two connections, the second's peer reading nothing until finish(), which returns what each peer got once both ended. */
async function quickAndStuck(
  t: Test,
): Promise<{ quick: net.Socket; stuck: net.Socket; finish(): Promise<{ quick: Buffer; stuck: Buffer }> }> {
  const quick = await pair();
  const stuck = await pair();
  t.teardown(quick.close);
  t.teardown(stuck.close);
  const quickGot: Buffer[] = [];
  quick.server.on('data', (d: Buffer) => quickGot.push(d));
  stuck.server.pause();
  return {
    quick: quick.client,
    stuck: stuck.client,
    async finish() {
      const stuckGot: Buffer[] = [];
      stuck.server.on('data', (d: Buffer) => stuckGot.push(d));
      const drained = once(stuck.client, 'drain');
      stuck.server.resume();
      await drained;
      quick.client.end();
      stuck.client.end();
      await Promise.all([once(quick.server, 'end'), once(stuck.server, 'end')]);
      return { quick: Buffer.concat(quickGot), stuck: Buffer.concat(stuckGot) };
    },
  };
}

t.test(`Node ${process.version} offers the handle writes (a line without them falls back to socket.write)`, async (t) => {
  t.equal(directWrites, true, 'process.binding("stream_wrap") gives WriteWrap and streamBaseState');
});

t.test('direct and stream writes interleaved arrive in order, byte for byte', async (t) => {
  const { client, server, close } = await pair();
  t.teardown(close);
  const parts: Buffer[] = [];
  for (let i = 0; i < 200; i++) parts.push(Buffer.alloc(1 + ((i * 7919) % 40000), i & 0xff));
  const expected = Buffer.concat([Buffer.from('head-', 'latin1'), ...parts]);
  const got: Buffer[] = [];
  server.on('data', (d: Buffer) => got.push(d));
  writeLatin1(client, 'head-');
  parts.forEach((p, i) => (i % 3 === 0 ? client.write(p) : writeBuffer(client, p)));
  client.end();
  await once(server, 'end');
  t.equal(Buffer.compare(Buffer.concat(got), expected), 0, `${expected.length} bytes in the order written`);
});

t.test('a peer that does not read: false, writeBlocked, then drain once it reads', async (t) => {
  const { client, server, close } = await pair();
  t.teardown(close);
  server.pause();
  const big = Buffer.alloc(16 * 1024 * 1024, 0x61);
  const ok = writeBuffer(client, big);
  t.equal(ok, false, 'a write the kernel cannot take at once reports backpressure');
  t.equal(writeBlocked(client), true, 'writeBlocked while libuv still holds bytes');
  t.equal(writesPending(client), true, 'writesPending too');
  const drained = once(client, 'drain');
  let received = 0;
  server.on('data', (d: Buffer) => (received += d.length));
  server.resume();
  await drained;
  t.equal(writeBlocked(client), false, 'no longer blocked after drain');
  t.equal(writesPending(client), false, 'nothing pending after drain');
  client.end();
  await once(server, 'end');
  t.equal(received, big.length, 'every byte arrived');
});

t.test('one request object serves writes that finish at once; a queued write keeps its own until done', async (t) => {
  // direct-write.ts makes its request objects with the stream_wrap binding's WriteWrap, read at each
  // write: counting constructions tells how many were made.
  const b = (process as unknown as { binding(name: string): { WriteWrap: new () => object } }).binding('stream_wrap');
  const Real = b.WriteWrap;
  const made: object[] = [];
  b.WriteWrap = function CountedWriteWrap(): object {
    const o = new Real();
    made.push(o);
    return o;
  } as unknown as new () => object;
  t.teardown(() => {
    b.WriteWrap = Real;
  });
  const { quick, stuck, finish } = await quickAndStuck(t);
  for (let i = 0; i < 50; i++) writeBuffer(quick, Buffer.from(`q${i};`));
  t.ok(made.length <= 1, `50 writes finished at once made ${made.length} request object(s)`);
  // A peer that does not read: its writes queue in libuv, each with a request object of its own, while
  // the other socket's writes go on; every byte of both arrives in order.
  const big = Buffer.alloc(8 * 1024 * 1024);
  for (let i = 0; i < big.length; i++) big[i] = (i * 13 + 5) & 0xff;
  const before = made.length;
  t.equal(writeBuffer(stuck, big.subarray(0, 4 * 1024 * 1024)), false, 'the first large write is queued');
  for (let i = 50; i < 100; i++) writeBuffer(quick, Buffer.from(`q${i};`));
  t.equal(writeBuffer(stuck, big.subarray(4 * 1024 * 1024)), false, 'the second queues behind it');
  for (let i = 100; i < 150; i++) writeLatin1(quick, `q${i};`);
  t.ok(made.length - before >= 2 && made.length - before <= 3, `queued writes took objects of their own: ${made.length - before} made`);
  const got = await finish();
  t.equal(
    got.quick.toString('latin1'),
    Array.from({ length: 150 }, (_, i) => `q${i};`).join(''),
    'the quick socket: every write, in order',
  );
  t.equal(Buffer.compare(got.stuck, big), 0, 'the stuck socket: 8 MiB byte for byte');
});

t.test('joined head and body: one buffer reused while writes finish at once, a queued one keeps its bytes', async (t) => {
  const { quick, stuck, finish } = await quickAndStuck(t);
  const body = (i: number, n: number): Buffer => Buffer.alloc(n, 0x41 + (i % 26));
  const sent: Buffer[] = [];
  const stuckSent: Buffer[] = [];
  const join = (socket: net.Socket, i: number, n: number, to: Buffer[]): boolean => {
    const head = `H${i}:`;
    to.push(Buffer.from(head, 'latin1'), body(i, n));
    return writeJoined(socket, head, body(i, n));
  };
  // A new join buffer is made with Buffer.allocUnsafeSlow: counted while the writes run.
  const realSlow = Buffer.allocUnsafeSlow;
  let made = 0;
  Buffer.allocUnsafeSlow = (n: number): ReturnType<typeof realSlow> => {
    made++;
    return realSlow(n);
  };
  t.teardown(() => {
    Buffer.allocUnsafeSlow = realSlow;
  });
  for (let i = 0; i < 20; i++) join(quick, i, 10 + i, sent);
  t.equal(made, 0, '20 joins whose writes finished at once: no new join buffer');
  // A peer that does not read: a large write fills the kernel's buffers, and a joined write behind it is
  // queued in libuv with the join buffer's bytes; the joins after it, on the other socket, must not
  // write into those bytes.
  const big = Buffer.alloc(8 * 1024 * 1024, 0x7a);
  writeBuffer(stuck, big);
  stuckSent.push(big);
  t.equal(join(stuck, 1000, 3000, stuckSent), false, 'the joined write behind it is queued');
  t.equal(made, 1, 'the queued write keeps its join buffer: a new one for the next join');
  // The same length as the queued join first: its view must be of the new buffer.
  join(quick, 1027, 3000, sent);
  for (let i = 20; i < 60; i++) join(quick, i, 3000 + i, sent);
  t.equal(made, 1, 'which the next 40 joins reuse');
  // Longer than the join buffer: a Buffer of its own.
  join(quick, 60, JOIN_SIZE, sent);
  join(stuck, 1001, 50, stuckSent);
  const got = await finish();
  t.equal(Buffer.compare(got.quick, Buffer.concat(sent)), 0, 'the quick socket: every joined write, byte for byte');
  t.equal(Buffer.compare(got.stuck, Buffer.concat(stuckSent)), 0, 'the stuck socket: the queued join kept its bytes');
});

t.test('a handle read once: taken while connecting, written through once connected, never after destroy()', async (t) => {
  const srv = net.createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  t.teardown(() => srv.close());
  const accepted = once(srv, 'connection') as Promise<[net.Socket]>;
  const socket = net.connect((srv.address() as net.AddressInfo).port, '127.0.0.1');
  t.teardown(() => socket.destroy());
  const h = handleOf(socket) as DirectHandle;
  t.not(h, null, 'net.connect() makes the handle before the connection is up');
  // The handle's writes counted through own properties over its prototype's methods.
  const calls = { buffer: 0, latin1: 0 };
  const realBuffer = h.writeBuffer;
  const realLatin1 = h.writeLatin1String;
  Object.assign(h, {
    writeBuffer(this: DirectHandle, ...a: Parameters<DirectHandle['writeBuffer']>) {
      calls.buffer++;
      return realBuffer.apply(this, a);
    },
    writeLatin1String(this: DirectHandle, ...a: Parameters<DirectHandle['writeLatin1String']>) {
      calls.latin1++;
      return realLatin1.apply(this, a);
    },
  });
  writeLatin1(socket, 'early;', h);
  t.equal(calls.latin1, 0, 'while connecting the write waits in the stream');
  await once(socket, 'connect');
  const [server] = await accepted;
  t.teardown(() => server.destroy());
  const got: Buffer[] = [];
  server.on('data', (d: Buffer) => got.push(d));
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(writeBuffer(socket, Buffer.from('direct;'), h), true, 'connected: written at once');
  t.equal(calls.buffer, 1, 'through the handle read before the connection was up');
  while (Buffer.concat(got).length < 13) await once(server, 'data');
  t.equal(Buffer.concat(got).toString('latin1'), 'early;direct;', 'both writes arrive, in order');
  const errors: Error[] = [];
  socket.on('error', (e: Error) => errors.push(e));
  socket.destroy();
  t.equal(writeBuffer(socket, Buffer.from('late;'), h), false, 'a write after destroy() fails as socket.write() does');
  t.equal(writeJoined(socket, 'late', Buffer.from(';'), h), false, 'a joined one too');
  t.equal(calls.buffer, 1, 'the handle read before destroy() is not written to');
  await new Promise((resolve) => setImmediate(resolve));
  t.same(errors, [], 'and no error event on the destroyed socket');
});

t.test('a write to a reset connection surfaces as the socket error, no throw', async (t) => {
  const { client, server, close } = await pair();
  t.teardown(close);
  server.pause();
  const big = Buffer.alloc(16 * 1024 * 1024, 0x62);
  writeBuffer(client, big);
  const failed = new Promise((resolve) => client.on('close', resolve));
  const errors: NodeJS.ErrnoException[] = [];
  client.on('error', (e: NodeJS.ErrnoException) => errors.push(e));
  server.resetAndDestroy();
  await failed;
  t.equal(client.destroyed, true, 'the writing socket is destroyed');
  t.ok(errors.length <= 1, 'at most one error event');
  if (errors.length === 1) t.match(errors[0]!.code, /^(EPIPE|ECONNRESET)$/, `error code ${errors[0]!.code}`);
});

t.test('a head and body on a socket that cannot take direct writes: joined and written through the stream', async (t) => {
  const { client, server, close } = await pair();
  t.teardown(close);
  const got: Buffer[] = [];
  server.on('data', (d: Buffer) => got.push(d));
  client.cork();
  t.equal(writeHeadAndBody(client, 'HEAD:', Buffer.from('body')), true, 'the stream takes it while corked');
  t.equal(client.writableLength, 9, 'head and body in one write');
  // The stream holds that write's buffer until uncorked: the next join must not write into it.
  writeJoined(client, 'X', Buffer.from('yz'));
  client.uncork();
  client.end();
  await once(server, 'end');
  t.equal(Buffer.concat(got).toString('latin1'), 'HEAD:bodyXyz');
});

t.test('a corked socket takes socket.write(): cork semantics are kept', async (t) => {
  const { client, server, close } = await pair();
  t.teardown(close);
  const got: Buffer[] = [];
  server.on('data', (d: Buffer) => got.push(d));
  client.cork();
  writeLatin1(client, 'a');
  t.equal(client.writableLength, 1, 'the byte waits in the stream while corked');
  writeBuffer(client, Buffer.from('b'));
  client.uncork();
  client.end();
  await once(server, 'end');
  t.equal(Buffer.concat(got).toString('latin1'), 'ab');
});
