/**
 * The transport relies on details of Node.js that its documentation does not promise (docs/transport.md,
 * "Read buffers"; README.md, "Node.js lines"): an accepted socket's `_handle` with `readStart`, a `net.Socket` made around such a
 * handle with an `onread` buffer, and `Buffer.prototype.latin1Slice` for header text. Each has a
 * fallback or a start-up check in lib/, but a Node line that drops one would make throughway slower or
 * refuse to start; these tests fail loudly on that line first, naming the detail that is gone.
 */
import t from 'tap';
import * as net from 'node:net';
import { once } from 'node:events';

t.test('Buffer.prototype.latin1Slice exists and decodes obs-text byte for byte', async (t) => {
  const slice = (Buffer.prototype as unknown as { latin1Slice?: (s: number, e: number) => string }).latin1Slice;
  t.equal(
    typeof slice,
    'function',
    `Node ${process.version} has no Buffer.prototype.latin1Slice (lib/transport/parser.ts refuses to start without it)`,
  );
  const b = Buffer.from([0x61, 0xe9, 0xff, 0x62]);
  t.equal(slice!.call(b, 1, 3), '\u00e9\u00ff', 'one character per byte (latin1), no replacement characters');
});

t.test('an accepted socket exposes _handle.readStart, and net.Socket({ handle, onread }) reads into a given buffer', async (t) => {
  const own = Buffer.allocUnsafe(4096);
  const seen: string[] = [];
  const adopted = new Promise<{ ok: boolean; why: string }>((resolve) => {
    const server = net.createServer({ pauseOnConnect: true }, (accepted) => {
      const old = accepted as unknown as { _handle: { readStart?: unknown } | null };
      const handle = old._handle;
      if (handle === null || typeof handle !== 'object' || typeof handle.readStart !== 'function') {
        resolve({ ok: false, why: `Node ${process.version}: an accepted socket has no _handle with readStart` });
        accepted.destroy();
        return;
      }
      old._handle = null;
      let socket: net.Socket;
      try {
        socket = new net.Socket({
          handle,
          allowHalfOpen: true,
          readable: true,
          writable: true,
          onread: {
            buffer: own,
            callback: (n: number, buf: Buffer) => {
              seen.push(buf.toString('latin1', 0, n));
              t.equal(buf, own, 'the bytes land in the buffer the socket was given');
              socket.end('pong');
              return true;
            },
          },
        } as net.SocketConstructorOpts);
      } catch (err) {
        resolve({ ok: false, why: `Node ${process.version}: net.Socket({ handle, onread }) threw ${(err as Error).message}` });
        return;
      }
      socket.on('close', () => {
        accepted.destroy();
        server.close();
        resolve({ ok: true, why: '' });
      });
    });
    server.listen(0, '127.0.0.1', () => {
      const c = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1', () => c.write('ping'));
      const got: Buffer[] = [];
      c.on('data', (d) => got.push(d));
      c.on('end', () => {
        t.equal(Buffer.concat(got).toString(), 'pong', 'the adopted socket writes too');
        c.end();
      });
    });
  });
  const r = await adopted;
  t.ok(r.ok, r.why || 'adopted');
  t.same(seen, ['ping'], 'onread saw the client bytes');
});

t.test('a wrapper destroyed after its handle was taken leaves the handle open: the re-wrapped socket still talks', async (t) => {
  // lib/transport/index.ts adopt() destroys the accepted wrapper at once, its _handle set to null first.
  const server = net.createServer({ pauseOnConnect: true }, (accepted) => {
    const old = accepted as unknown as { _handle: unknown };
    const handle = old._handle;
    old._handle = null;
    const socket = new net.Socket({ handle, readable: true, writable: true } as net.SocketConstructorOpts);
    accepted.destroy();
    socket.on('data', (d) => socket.end(`echo ${String(d)}`));
    server.close();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const c = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  c.write('hi');
  let got = '';
  c.on('data', (d) => (got += String(d)));
  await once(c, 'close');
  t.equal(got, 'echo hi');
});
