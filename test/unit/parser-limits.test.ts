/**
 * lib/transport/parser.ts counts every byte of a head (start line to the empty line, RFC 9112 2.1)
 * against maxHeaderSize while parsing: a head of exactly the limit passes and one byte more fails,
 * whatever the reads look like. Trailer fields are bounded the same way.
 */
import t from 'tap';
import { ExecStatus, HttpParser } from '../../lib/transport/parser';
import { latin1, parseCut, Recorder, singleCuts } from './helpers/parser-recorder';

/** A request head of exactly `size` bytes. */
function requestHead(size: number): Buffer {
  const fixed = 'GET /limit HTTP/1.1\r\nHost: h\r\nX-Fill: \r\n\r\n';
  return latin1(fixed.replace('X-Fill: ', 'X-Fill: ' + 'f'.repeat(size - fixed.length)));
}

/** A response head of exactly `size` bytes with a 2-byte body after it. */
function responseHead(size: number): Buffer {
  const fixed = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Fill: \r\n\r\n';
  return latin1(fixed.replace('X-Fill: ', 'X-Fill: ' + 'f'.repeat(size - fixed.length)) + 'ok');
}

const LIMIT = 1000;

t.test('a head of exactly maxHeaderSize passes, one byte more fails', async (t) => {
  const at = requestHead(LIMIT);
  t.equal(at.length, LIMIT);
  const ok = parseCut('request', at, [], undefined, LIMIT);
  t.equal(ok.outcome, 'OK');
  t.equal(ok.events[0]?.event === 'head' && ok.events[0].headBytes, LIMIT);
  const over = parseCut('request', requestHead(LIMIT + 1), [], undefined, LIMIT);
  t.equal(over.outcome, 'ERROR HPE_HEADER_OVERFLOW');
  t.equal(over.events.length, 0, 'onHead is never called for an oversized head');
});

t.test('the same, with the head arriving one byte per execute', async (t) => {
  for (const [size, want] of [
    [LIMIT, 'OK'],
    [LIMIT + 1, 'ERROR HPE_HEADER_OVERFLOW'],
  ] as const) {
    const input = requestHead(size);
    const cuts = Array.from({ length: input.length - 1 }, (_, i) => i + 1);
    t.equal(parseCut('request', input, cuts, undefined, LIMIT).outcome, want, `${size} bytes`);
  }
});

t.test('the same, split anywhere, for a response', async (t) => {
  for (const [size, want] of [
    [LIMIT, 'OK'],
    [LIMIT + 1, 'ERROR HPE_HEADER_OVERFLOW'],
  ] as const) {
    const input = responseHead(size);
    const wrong: number[] = [];
    for (const cuts of singleCuts(input.length)) {
      if (parseCut('response', input, cuts, undefined, LIMIT).outcome !== want) wrong.push(cuts[0]!);
    }
    t.strictSame(wrong, [], `${size}-byte head`);
  }
});

t.test('a head that never ends fails once it passes the limit', async (t) => {
  const parser = new HttpParser('request', new Recorder(), LIMIT);
  const start = latin1('GET / HTTP/1.1\r\nX-Endless: ');
  t.equal(parser.execute(start), ExecStatus.OK);
  const byte = latin1('a');
  let fed = start.length;
  let st = ExecStatus.OK;
  while (st === ExecStatus.OK && fed < 10 * LIMIT) {
    st = parser.execute(byte);
    fed++;
  }
  t.equal(st, ExecStatus.ERROR);
  t.equal(fed, LIMIT + 1, 'the byte after the limit is refused');
  t.equal(parser.errorName, 'HPE_HEADER_OVERFLOW');
  parser.destroy();
});

t.test('an oversized head inside one large read is refused before the read is used up', async (t) => {
  const rec = new Recorder();
  const parser = new HttpParser('request', rec, LIMIT);
  const huge = latin1('GET / HTTP/1.1\r\nX-Big: ' + 'b'.repeat(200_000) + '\r\n\r\n');
  t.equal(parser.execute(huge), ExecStatus.ERROR);
  t.equal(parser.errorName, 'HPE_HEADER_OVERFLOW');
  t.ok(parser.consumed <= huge.length);
  t.strictSame(parser.headers.join('').length <= LIMIT, true, 'no more than the limit was held as strings');
  parser.destroy();
});

t.test('each pipelined head is counted from its own first byte', async (t) => {
  // The second head shares a read with the end of the first message and is exactly at the limit.
  const first = latin1('POST /1 HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc');
  const second = requestHead(LIMIT);
  const input = Buffer.concat([first, latin1('\r\n'), second]);
  const r = parseCut('request', input, [], undefined, LIMIT);
  t.equal(r.outcome, 'OK');
  const heads = r.events.filter((e) => e.event === 'head');
  t.strictSame(
    heads.map((h) => h.event === 'head' && h.headBytes),
    [first.length - 3, LIMIT],
  );
  const over = Buffer.concat([first, requestHead(LIMIT + 1)]);
  t.equal(parseCut('request', over, [], undefined, LIMIT).outcome, 'ERROR HPE_HEADER_OVERFLOW');
});

t.test('trailer fields are bounded by maxHeaderSize too', async (t) => {
  const body = 'POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n';
  const fine = latin1(body + 'T: ' + 'v'.repeat(LIMIT - 1) + '\r\n\r\n');
  const r = parseCut('request', fine, [], undefined, LIMIT);
  t.equal(r.outcome, 'OK');
  t.equal(r.events[2]?.event === 'complete' && r.events[2].trailers?.[1]?.length, LIMIT - 1);
  const tooMany = latin1(body + 'T: v\r\n'.repeat(LIMIT) + '\r\n');
  t.equal(parseCut('request', tooMany, [], undefined, LIMIT).outcome, 'ERROR HPE_HEADER_OVERFLOW');
});

/** A chunked request whose first chunk-size line (extensions and CRLF included) is exactly `size` bytes. */
function framed(size: number): Buffer {
  const line = '5;ext=' + 'e'.repeat(size - '5;ext=\r\n'.length) + '\r\n';
  return latin1('POST /f HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n' + line + 'hello\r\n0\r\n\r\n');
}

t.test('chunk framing between two data bytes is bounded by maxHeaderSize, split anywhere', async (t) => {
  const small = 200;
  for (const [size, want] of [
    [small, 'OK'],
    [small + 1, 'ERROR HPE_CHUNK_EXTENSIONS_OVERFLOW'],
  ] as const) {
    const input = framed(size);
    t.equal(parseCut('request', input, [], undefined, small).outcome, want, `${size}-byte size line`);
    const wrong: string[] = [];
    for (const cuts of singleCuts(input.length)) {
      const r = parseCut('request', input, cuts, undefined, small);
      if (r.outcome !== want) wrong.push(`${cuts[0]}: ${r.outcome}`);
    }
    t.strictSame(wrong, [], `${size}-byte size line, split anywhere`);
  }
});

t.test('endless chunk extensions are refused soon after the limit', async (t) => {
  // Extensions reach no callback, so without this bound they would stream forever past every
  // body-size limit (Node's CVE-2024-22019).
  const parser = new HttpParser('request', new Recorder(), LIMIT);
  t.equal(parser.execute(latin1('POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;x=')), ExecStatus.OK);
  const piece = latin1('a'.repeat(100));
  let fed = 0;
  let st = ExecStatus.OK;
  while (st === ExecStatus.OK && fed < 100 * LIMIT) {
    st = parser.execute(piece);
    fed += piece.length;
  }
  t.equal(st, ExecStatus.ERROR);
  t.equal(parser.errorName, 'HPE_CHUNK_EXTENSIONS_OVERFLOW');
  t.ok(fed <= LIMIT + piece.length, `refused after ${fed} bytes`);
  parser.destroy();
});

t.test('ordinary chunked bodies are not affected by the framing bound', async (t) => {
  const parts: string[] = ['POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n'];
  for (let i = 0; i < 16; i++) parts.push(`1000;n=${i}\r\n` + 'd'.repeat(4096) + '\r\n');
  parts.push('0\r\n\r\n');
  const input = latin1(parts.join(''));
  const r = parseCut('request', input, [100, 5000, 30000], undefined, 64);
  t.equal(r.outcome, 'OK');
  t.equal(r.events[1]?.event === 'body' && r.events[1].text.length, 16 * 4096);
});

t.test('maxHeaderSize must be a positive integer', async (t) => {
  t.throws(() => new HttpParser('request', new Recorder(), 0), RangeError);
  t.throws(() => new HttpParser('request', new Recorder(), 1.5), RangeError);
  t.throws(() => new HttpParser('request', new Recorder(), Number.NaN), RangeError);
});
