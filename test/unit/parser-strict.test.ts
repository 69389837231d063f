/**
 * lib/transport/parser.ts rejects what llhttp rejects with no lenient flag: the framing ambiguities
 * behind request smuggling (RFC 9112 6.1, 6.3, 11.2) and malformed syntax, however the bytes are split.
 */
import t from 'tap';
import { ExecStatus, HttpParser } from '../../lib/transport/parser';
import { latin1, parseCut, Recorder, singleCuts } from './helpers/parser-recorder';

const REJECTED: { why: string; kind: 'request' | 'response'; input: string; errorName: string }[] = [
  {
    why: 'Content-Length then Transfer-Encoding (RFC 9112 6.1)',
    kind: 'request',
    input: 'POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    errorName: 'HPE_INVALID_TRANSFER_ENCODING',
  },
  {
    why: 'Transfer-Encoding then Content-Length',
    kind: 'request',
    input: 'POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n0\r\n\r\n',
    errorName: 'HPE_INVALID_CONTENT_LENGTH',
  },
  {
    why: 'Content-Length and Transfer-Encoding in a response',
    kind: 'response',
    input: 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    errorName: 'HPE_INVALID_TRANSFER_ENCODING',
  },
  {
    why: 'request Transfer-Encoding not ending in chunked (RFC 9112 6.3 rule 4)',
    kind: 'request',
    input: 'POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n',
    errorName: 'HPE_INVALID_TRANSFER_ENCODING',
  },
  {
    why: 'two differing Content-Length fields (RFC 9112 6.3 rule 5)',
    kind: 'request',
    input: 'POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx',
    errorName: 'HPE_UNEXPECTED_CONTENT_LENGTH',
  },
  {
    why: 'two equal Content-Length fields (llhttp strict rejects any duplicate)',
    kind: 'response',
    input: 'HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx',
    errorName: 'HPE_UNEXPECTED_CONTENT_LENGTH',
  },
  {
    why: 'a Content-Length list',
    kind: 'request',
    input: 'POST / HTTP/1.1\r\nContent-Length: 1, 1\r\n\r\nx',
    errorName: 'HPE_INVALID_CONTENT_LENGTH',
  },
  {
    why: 'a negative Content-Length',
    kind: 'request',
    input: 'POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n',
    errorName: 'HPE_INVALID_CONTENT_LENGTH',
  },
  {
    why: 'a Content-Length beyond 64 bits',
    kind: 'request',
    input: 'POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n',
    errorName: 'HPE_INVALID_CONTENT_LENGTH',
  },
  {
    why: 'whitespace between field name and colon (RFC 9112 5.1)',
    kind: 'request',
    input: 'GET / HTTP/1.1\r\nHost : h\r\n\r\n',
    errorName: 'HPE_INVALID_HEADER_TOKEN',
  },
  {
    why: 'a separator in a field name',
    kind: 'request',
    input: 'GET / HTTP/1.1\r\nX(a): h\r\n\r\n',
    errorName: 'HPE_INVALID_HEADER_TOKEN',
  },
  {
    why: 'obs-fold in a request (RFC 9112 5.2)',
    kind: 'request',
    input: 'GET / HTTP/1.1\r\nX-A: one\r\n two\r\n\r\n',
    errorName: 'HPE_INVALID_HEADER_TOKEN',
  },
  {
    why: 'obs-fold in a response',
    kind: 'response',
    input: 'HTTP/1.1 200 OK\r\nX-A: one\r\n\ttwo\r\nContent-Length: 0\r\n\r\n',
    errorName: 'HPE_INVALID_HEADER_TOKEN',
  },
  {
    why: 'NUL in a field value',
    kind: 'request',
    input: 'GET / HTTP/1.1\r\nX-A: a\0b\r\n\r\n',
    errorName: 'HPE_INVALID_HEADER_TOKEN',
  },
  {
    why: 'NUL in a field name',
    kind: 'request',
    input: 'GET / HTTP/1.1\r\nX\0A: b\r\n\r\n',
    errorName: 'HPE_INVALID_HEADER_TOKEN',
  },
  {
    why: 'NUL in the request target',
    kind: 'request',
    input: 'GET /a\0b HTTP/1.1\r\n\r\n',
    errorName: 'HPE_INVALID_URL',
  },
  {
    why: 'bare LF after the request line (RFC 9112 2.2)',
    kind: 'request',
    input: 'GET / HTTP/1.1\nHost: h\r\n\r\n',
    errorName: 'HPE_INVALID_VERSION',
  },
  {
    why: 'bare LF after a field line',
    kind: 'request',
    input: 'GET / HTTP/1.1\r\nHost: h\nX: y\r\n\r\n',
    errorName: 'HPE_CR_EXPECTED',
  },
  {
    why: 'bare LF ending the header section',
    kind: 'response',
    input: 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\n',
    errorName: 'HPE_INVALID_HEADER_TOKEN',
  },
  {
    why: 'bare CR in a field line',
    kind: 'request',
    input: 'GET / HTTP/1.1\r\nA: b\rC: d\r\n\r\n',
    errorName: 'HPE_LF_EXPECTED',
  },
  {
    why: 'a chunk size that is not hex (RFC 9112 7.1)',
    kind: 'request',
    input: 'POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
    errorName: 'HPE_INVALID_CHUNK_SIZE',
  },
  {
    why: 'a negative chunk size',
    kind: 'request',
    input: 'POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n',
    errorName: 'HPE_INVALID_CHUNK_SIZE',
  },
  {
    why: 'a chunk size beyond 64 bits',
    kind: 'response',
    input: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n',
    errorName: 'HPE_INVALID_CHUNK_SIZE',
  },
  {
    why: 'whitespace after a chunk size',
    kind: 'request',
    input: 'POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n',
    errorName: 'HPE_INVALID_CHUNK_SIZE',
  },
  {
    why: 'bare LF after a chunk size',
    kind: 'request',
    input: 'POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n',
    errorName: 'HPE_CR_EXPECTED',
  },
  {
    why: 'chunk data longer than its size',
    kind: 'request',
    input: 'POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX\r\n0\r\n\r\n',
    errorName: 'HPE_STRICT',
  },
  {
    why: 'non-ASCII in the request target (RFC 3986 2)',
    kind: 'request',
    input: 'GET /caf\xe9 HTTP/1.1\r\n\r\n',
    errorName: 'HPE_INVALID_URL',
  },
  {
    why: 'a lower-case method',
    kind: 'request',
    input: 'get / HTTP/1.1\r\n\r\n',
    errorName: 'HPE_INVALID_METHOD',
  },
  {
    why: 'whitespace before the first field line (RFC 9112 2.2)',
    kind: 'request',
    input: 'GET / HTTP/1.1\r\n Host: h\r\n\r\n',
    errorName: 'HPE_UNEXPECTED_SPACE',
  },
  {
    why: 'a request after one that closes the connection (RFC 9112 9.6)',
    kind: 'request',
    input: 'GET /1 HTTP/1.1\r\nConnection: close\r\n\r\nGET /2 HTTP/1.1\r\n\r\n',
    errorName: 'HPE_CLOSED_CONNECTION',
  },
  {
    why: 'bytes after a response that closes the connection',
    kind: 'response',
    input: 'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\n\r\n',
    errorName: 'HPE_CLOSED_CONNECTION',
  },
  {
    why: 'a four-digit status code',
    kind: 'response',
    input: 'HTTP/1.1 2000 OK\r\n\r\n',
    errorName: 'HPE_INVALID_STATUS',
  },
];

for (const c of REJECTED) {
  t.test(`ERROR: ${c.why}`, async (t) => {
    const input = latin1(c.input);
    t.equal(parseCut(c.kind, input, []).outcome, `ERROR ${c.errorName}`, 'in one read');
    const wrong: string[] = [];
    for (const cuts of singleCuts(input.length)) {
      const r = parseCut(c.kind, input, cuts);
      if (r.outcome !== `ERROR ${c.errorName}`) wrong.push(`${cuts[0]}: ${r.outcome}`);
    }
    t.strictSame(wrong, [], 'split anywhere');
  });
}

t.test('an error reports its reason and position, stays, and reset() clears it', async (t) => {
  const rec = new Recorder();
  const parser = new HttpParser('request', rec, 8192);
  const bad = latin1('GET / HTTP/1.1\r\nX-A: one\r\n two\r\n\r\n');
  t.equal(parser.execute(bad), ExecStatus.ERROR);
  t.equal(parser.errorName, 'HPE_INVALID_HEADER_TOKEN');
  t.equal(parser.errorReason, 'Unexpected whitespace after header value');
  t.equal(parser.consumed, 'GET / HTTP/1.1\r\nX-A: one\r\n'.length, 'offset of the offending byte');
  t.equal(rec.events.length, 0, 'no head was delivered');
  t.equal(parser.execute(latin1('GET / HTTP/1.1\r\n\r\n')), ExecStatus.ERROR, 'a failed parser stays failed');
  t.equal(parser.errorName, 'HPE_INVALID_HEADER_TOKEN');
  parser.reset();
  t.equal(parser.errorName, '');
  t.equal(parser.execute(latin1('GET /ok HTTP/1.1\r\n\r\n')), ExecStatus.OK);
  t.equal(parser.url, '/ok');
  parser.destroy();
});

t.test('what strict parsing still accepts is visible to the caller', async (t) => {
  // Not llhttp's to refuse: the transport checks these (RFC 9112 3.2 duplicate Host, 2.3 version).
  const dupHost = parseCut('request', latin1('GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n'), []);
  t.equal(dupHost.outcome, 'OK');
  t.strictSame(dupHost.events[0]?.event === 'head' && dupHost.events[0].headers, ['Host', 'a', 'Host', 'b']);
  const v2 = parseCut('request', latin1('GET / HTTP/2.0\r\n\r\n'), []);
  t.equal(v2.events[0]?.event === 'head' && v2.events[0].version, '2.0');
  // A response Transfer-Encoding that does not end in chunked is read until close (RFC 9112 6.3 rule 4).
  const teGzip = parseCut('response', latin1('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nabc'), [], undefined, 8192, true);
  t.equal(teGzip.outcome, 'OK');
  t.strictSame(teGzip.events.slice(1), [
    { event: 'body', text: 'abc' },
    { event: 'complete', trailers: null },
  ]);
});
