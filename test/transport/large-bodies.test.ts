/**
 * Large bodies stream through byte-exact (sha256 on both ends) and without being buffered: while a
 * 100 MiB body crosses the proxy, the memory still referenced in this process (proxy, client and backend
 * all live here) grows by a few MiB at most, far below the body size.
 */
import t, { type Test } from 'tap';
import { rawBackend } from '../helpers/backend';
import { RawClient } from '../helpers/client';
import { Digest, MiB, piece, writeBody } from '../helpers/bodies';
import { MemorySampler } from '../helpers/memory';
import { checkTransitions, startTransport } from '../helpers/transport';

/**
 * Referenced memory may grow by this much at most: the proxy's high-water marks are 1 MiB per side, and
 * socket queues on the client and backend hold a little more (measured: 0.2 to 2.2 MiB).
 */
const MAX_GROWTH = 8 * MiB;

async function upload(t: Test, size: number, measure: boolean): Promise<void> {
  let mem: MemorySampler | undefined;
  const backend = await rawBackend({
    keepBody: false,
    record: false,
    onRequestHead: (c) => {
      c.data['digest'] = new Digest();
    },
    onRequestBody: (c, p) => {
      (c.data['digest'] as Digest).update(p);
      mem?.progress(p.length);
    },
    onRequest: (c) => {
      const d = c.data['digest'] as Digest;
      c.respond(200, `${d.bytes} ${d.hex()}`);
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { socketTimeout: 20_000 } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  if (measure) mem = new MemorySampler();
  await c.write(`POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: ${size}\r\nContent-Type: application/octet-stream\r\n\r\n`);
  const sent = await writeBody(c.socket, size);
  const res = await c.finalResponse(60_000);
  const peak = mem?.stop();
  t.equal(res.status, 200);
  t.notOk(sent.cut, 'the whole body was written');
  t.equal(res.body.toString(), `${size} ${sent.sha256}`, 'the backend received exactly the bytes sent (length and sha256)');
  t.equal(h.faults.length, 0);
  if (peak !== undefined) {
    t.comment(
      `upload ${size / MiB} MiB: peak referenced growth arrayBuffers ${(peak.arrayBuffers / MiB).toFixed(1)} MiB, rss ${(peak.rss / MiB).toFixed(1)} MiB, ${peak.samples} samples`,
    );
    t.ok(peak.samples >= 10, `memory was sampled during the transfer (${peak.samples} samples)`);
    t.ok(peak.arrayBuffers < MAX_GROWTH, `arrayBuffers grew ${(peak.arrayBuffers / MiB).toFixed(1)} MiB < ${MAX_GROWTH / MiB} MiB`);
    t.ok(peak.rss < size / 2, `rss grew ${(peak.rss / MiB).toFixed(1)} MiB, well under the body size`);
  }
}

async function download(t: Test, size: number, measure: boolean, chunked: boolean): Promise<void> {
  let sentHash = '';
  const backend = await rawBackend({
    onRequest: (c) => {
      void (async () => {
        const d = new Digest();
        await c.writeDrained(
          Buffer.from(`HTTP/1.1 200 OK\r\n${chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${size}`}\r\n\r\n`, 'latin1'),
        );
        for (let i = 0, left = size; left > 0; i++) {
          const p = piece(i, Math.min(64 * 1024, left));
          left -= p.length;
          d.update(p);
          await c.writeDrained(chunked ? Buffer.concat([Buffer.from(p.length.toString(16) + '\r\n'), p, Buffer.from('\r\n')]) : p);
        }
        if (chunked) await c.writeDrained(Buffer.from('0\r\n\r\n'));
        sentHash = d.hex();
      })().catch(() => {});
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { socketTimeout: 20_000 } });
  const received = new Digest();
  let mem: MemorySampler | undefined;
  const c = await RawClient.connect(h.port, {
    keepBody: false,
    record: false,
    onBody: (p) => {
      received.update(p);
      mem?.progress(p.length);
    },
  });
  t.teardown(() => c.destroy());
  if (measure) mem = new MemorySampler();
  await c.write('GET /download HTTP/1.1\r\nHost: a\r\n\r\n');
  const res = await c.finalResponse(60_000);
  const peak = mem?.stop();
  t.equal(res.status, 200);
  t.ok(res.complete, 'complete response');
  t.equal(res.chunked, chunked, chunked ? 'chunked framing kept' : 'Content-Length framing kept');
  t.equal(received.bytes, size, 'every byte arrived');
  t.equal(received.hex(), sentHash, 'sha256 of what arrived equals sha256 of what the backend sent');
  t.equal(h.faults.length, 0);
  if (peak !== undefined) {
    t.comment(
      `download ${size / MiB} MiB: peak referenced growth arrayBuffers ${(peak.arrayBuffers / MiB).toFixed(1)} MiB, rss ${(peak.rss / MiB).toFixed(1)} MiB, ${peak.samples} samples`,
    );
    t.ok(peak.samples >= 10, `memory was sampled during the transfer (${peak.samples} samples)`);
    t.ok(peak.arrayBuffers < MAX_GROWTH, `arrayBuffers grew ${(peak.arrayBuffers / MiB).toFixed(1)} MiB < ${MAX_GROWTH / MiB} MiB`);
    t.ok(peak.rss < size / 2, `rss grew ${(peak.rss / MiB).toFixed(1)} MiB, well under the body size`);
  }
}

t.test('1 MiB upload, byte-exact', (t) => upload(t, 1 * MiB, false));
t.test('1 MiB chunked upload: chunk framing relayed verbatim, payload byte-exact', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, `${req.bodyLength}`) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  const head = 'POST /chunked HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n';
  const wire: Buffer[] = [];
  let payload = 0;
  for (let i = 0; payload < MiB; i++) {
    const p = piece(i, Math.min(1000 + i * 37, MiB - payload)); // odd sizes, so chunks straddle reads
    payload += p.length;
    wire.push(Buffer.from(`${p.length.toString(16)};i=${i}\r\n`), p, Buffer.from('\r\n'));
  }
  wire.push(Buffer.from('0\r\nX-Done: 1\r\n\r\n'));
  const body = Buffer.concat(wire);
  await c.write(head);
  for (let off = 0; off < body.length; off += 100_000) await c.write(body.subarray(off, off + 100_000));
  const res = await c.finalResponse(10_000);
  t.equal(res.body.toString(), String(MiB), 'the backend decoded the whole payload');
  const req = backend.conns[0]?.requests[0];
  t.equal(req?.headers['transfer-encoding'], 'chunked', 'Transfer-Encoding kept: the framing is relayed, not redone');
  t.ok(req?.rawBody.equals(body), 'the body bytes, framing, extensions and trailer included, are identical');
  t.equal(h.faults.length, 0);
});
t.test('1 MiB download, byte-exact', (t) => download(t, 1 * MiB, false, false));
t.test('1 MiB chunked download, byte-exact', (t) => download(t, 1 * MiB, false, true));
t.test('a client that reads in fits and starts gets a 16 MiB body byte-exact', async (t) => {
  // The proxy reuses its backend read buffers; one still queued toward a slow client must not be
  // overwritten by the next read. A reader that keeps pausing makes writes queue.
  let sentHash = '';
  const backend = await rawBackend({
    onRequest: (c) => {
      void (async () => {
        const d = new Digest();
        await c.writeDrained(Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${16 * MiB}\r\n\r\n`));
        for (let i = 0; i < 256; i++) {
          const p = piece(i);
          d.update(p);
          await c.writeDrained(p);
        }
        sentHash = d.hex();
      })().catch(() => {});
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { highWaterMark: 256 * 1024 } });
  const received = new Digest();
  const c = await RawClient.connect(h.port, { keepBody: false, record: false, onBody: (p) => received.update(p) });
  t.teardown(() => c.destroy());
  let reads = 0;
  c.socket.on('data', () => {
    if (++reads % 8 === 0) {
      c.socket.pause();
      setTimeout(() => c.socket.resume(), 2);
    }
  });
  await c.write('GET /stutter HTTP/1.1\r\nHost: a\r\n\r\n');
  const res = await c.finalResponse(30_000);
  t.equal(res.bodyLength, 16 * MiB);
  t.equal(received.hex(), sentHash, 'sha256 matches');
  t.equal(h.faults.length, 0);
});

t.test('100 MiB upload, byte-exact, memory flat', (t) => upload(t, 100 * MiB, true));
t.test('100 MiB download, byte-exact, memory flat', (t) => download(t, 100 * MiB, true, false));

checkTransitions(t);
