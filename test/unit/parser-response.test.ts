/**
 * lib/transport/parser.ts on the response side (RFC 9112 §6.3): the parser must be told
 * about HEAD, a 1xx is its own message, 204/304 have no body, a body without length ends at EOF; and
 * upgrades (101, Upgrade requests, CONNECT) hand the exact first tunnel byte back.
 */
import t from 'tap';
import { ExecStatus, HEAD_CONTINUE, HEAD_SKIP_BODY, HttpParser, PAUSE } from '../../lib/transport/parser';
import { latin1, parseCut, Recorder, singleCuts } from './helpers/parser-recorder';

t.test('response to HEAD: HEAD_SKIP_BODY ignores Content-Length, the next response follows', async (t) => {
  const input = latin1('HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n' + 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
  const skipFirst = (r: Recorder): void => {
    let n = 0;
    r.head = () => (n++ === 0 ? HEAD_SKIP_BODY : HEAD_CONTINUE);
  };
  const whole = parseCut('response', input, [], skipFirst);
  t.equal(whole.outcome, 'OK');
  t.strictSame(
    whole.events.map((e) =>
      e.event === 'head' ? `head ${e.contentLength} ka=${e.keepAlive}` : e.event === 'body' ? `body ${e.text}` : 'complete',
    ),
    ['head 1234 ka=true', 'complete', 'head 2 ka=true', 'body ok', 'complete'],
  );
  const wrong: number[] = [];
  for (const cuts of singleCuts(input.length)) {
    const r = parseCut('response', input, cuts, skipFirst);
    if (r.outcome !== 'OK' || JSON.stringify(r.events) !== JSON.stringify(whole.events)) wrong.push(cuts[0]!);
  }
  t.strictSame(wrong, []);
});

t.test('without HEAD_SKIP_BODY the same bytes are read as a body', async (t) => {
  const input = latin1('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nHTTP/');
  const r = parseCut('response', input, []);
  t.strictSame(r.events[1], { event: 'body', text: 'HTTP/' });
});

t.test('HEAD response without Content-Length stays keep-alive once skipped (RFC 9112 6.3 rule 1)', async (t) => {
  const rec = new Recorder();
  rec.head = HEAD_SKIP_BODY;
  const parser = new HttpParser('response', rec, 8192);
  t.equal(parser.execute(latin1('HTTP/1.1 200 OK\r\nX: y\r\n\r\n')), ExecStatus.OK);
  t.equal(rec.events[0]?.event === 'head' && rec.events[0].keepAlive, false, 'in onHead: would read to EOF');
  t.equal(parser.keepAlive, true, 'after HEAD_SKIP_BODY: no body, connection reusable');
  t.equal(rec.events[1]?.event, 'complete');
  parser.destroy();
});

t.test('100 Continue is its own message; the 200 follows on the same parser', async (t) => {
  const input = latin1(
    'HTTP/1.1 100 Continue\r\n\r\n' +
      'HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n' +
      'HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndone',
  );
  const whole = parseCut('response', input, []);
  t.equal(whole.outcome, 'OK');
  t.strictSame(
    whole.events.map((e) =>
      e.event === 'head' ? `head ${e.statusCode} ${e.statusText}` : e.event === 'body' ? `body ${e.text}` : 'complete',
    ),
    ['head 100 Continue', 'complete', 'head 103 Early Hints', 'complete', 'head 200 OK', 'body done', 'complete'],
  );
  const wrong: number[] = [];
  for (const cuts of singleCuts(input.length)) {
    const r = parseCut('response', input, cuts);
    if (r.outcome !== 'OK' || JSON.stringify(r.events) !== JSON.stringify(whole.events)) wrong.push(cuts[0]!);
  }
  t.strictSame(wrong, []);
});

t.test('204 and 304 have no body, even with Content-Length (RFC 9110 15.3.5, 15.4.5)', async (t) => {
  for (const status of ['204 No Content', '304 Not Modified']) {
    const input = latin1(`HTTP/1.1 ${status}\r\nContent-Length: 10\r\n\r\n` + 'HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx');
    const r = parseCut('response', input, []);
    t.equal(r.outcome, 'OK', status);
    t.strictSame(
      r.events.map((e) => e.event),
      ['head', 'complete', 'head', 'body', 'complete'],
      `${status}: complete right after the head`,
    );
    t.equal(r.events[0]?.event === 'head' && r.events[0].keepAlive, true);
  }
  const noLength = parseCut('response', latin1('HTTP/1.1 204 No Content\r\n\r\n'), []);
  t.strictSame(
    noLength.events.map((e) => e.event),
    ['head', 'complete'],
    '204 without Content-Length',
  );
});

t.test('a response without length is read until EOF and completes in finish()', async (t) => {
  const rec = new Recorder();
  const parser = new HttpParser('response', rec, 8192);
  t.equal(parser.execute(latin1('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nfirst ')), ExecStatus.OK);
  t.equal(parser.execute(latin1('second')), ExecStatus.OK);
  t.equal(rec.events[0]?.event === 'head' && rec.events[0].keepAlive, false, 'the close ends it (RFC 9112 6.3 rule 8)');
  t.strictSame(
    rec.events.map((e) => e.event),
    ['head', 'body'],
    'not complete before EOF',
  );
  t.equal(parser.finish(), ExecStatus.OK);
  t.strictSame(rec.events.slice(1), [
    { event: 'body', text: 'first second' },
    { event: 'complete', trailers: null },
  ]);
  parser.destroy();
});

t.test('finish() reports PAUSED when onComplete pauses, like execute()', async (t) => {
  const rec = new Recorder();
  rec.complete = PAUSE;
  const parser = new HttpParser('response', rec, 8192);
  t.equal(parser.execute(latin1('HTTP/1.0 200 OK\r\n\r\nbody')), ExecStatus.OK);
  t.equal(parser.finish(), ExecStatus.PAUSED);
  t.equal(rec.events[rec.events.length - 1]?.event, 'complete');
  parser.destroy();
});

t.test('finish() inside a message with a length is an error; between messages it is fine', async (t) => {
  const cases: [string, string][] = [
    ['HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort', 'HPE_INVALID_EOF_STATE'],
    ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab', 'HPE_INVALID_EOF_STATE'],
    ['HTTP/1.1 200 OK\r\nContent-Le', 'HPE_INVALID_EOF_STATE'],
    ['HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok', ''],
    ['', ''],
  ];
  for (const [text, errorName] of cases) {
    const rec = new Recorder();
    const parser = new HttpParser('response', rec, 8192);
    parser.execute(latin1(text));
    t.equal(parser.finish(), errorName === '' ? ExecStatus.OK : ExecStatus.ERROR, JSON.stringify(text));
    t.equal(parser.errorName, errorName);
    parser.destroy();
  }
});

t.test('finish() after a PAUSE at the head ends the pause and the message', async (t) => {
  const rec = new Recorder();
  rec.head = PAUSE;
  const parser = new HttpParser('response', rec, 8192);
  t.equal(parser.execute(latin1('HTTP/1.1 200 OK\r\n\r\n')), ExecStatus.PAUSED);
  t.equal(parser.finish(), ExecStatus.OK);
  t.strictSame(
    rec.events.map((e) => e.event),
    ['head', 'complete'],
  );
  parser.destroy();
});

t.test('Upgrade request: UPGRADE with consumed = first tunnel byte', async (t) => {
  const head = 'GET /chat HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n';
  const buf = latin1('XX' + head + '\x81\x05hello');
  const rec = new Recorder();
  const parser = new HttpParser('request', rec, 8192);
  t.equal(parser.execute(buf, 2), ExecStatus.UPGRADE);
  t.equal(parser.consumed, head.length);
  t.equal(buf.subarray(2 + parser.consumed).toString('latin1'), '\x81\x05hello');
  t.equal(rec.events[0]?.event === 'head' && rec.events[0].upgrade, true);
  t.throws(() => parser.execute(buf), /upgrade/, 'the connection is no longer HTTP/1.1');
  t.equal(parser.finish(), ExecStatus.OK);
  parser.reset();
  t.equal(parser.execute(latin1('GET / HTTP/1.1\r\n\r\n')), ExecStatus.OK, 'reset() makes it usable again');
  parser.destroy();
});

t.test('Upgrade request split anywhere: same offset', async (t) => {
  const head = 'GET /chat HTTP/1.1\r\nConnection: upgrade\r\nUpgrade: h2c\r\n\r\n';
  const buf = latin1(head + 'TUNNEL');
  const wrong: number[] = [];
  for (let cut = 1; cut < buf.length; cut++) {
    const parser = new HttpParser('request', new Recorder(), 8192);
    let st = parser.execute(buf, 0, cut);
    let tunnel = -1;
    if (st === ExecStatus.UPGRADE) tunnel = parser.consumed;
    else if (st === ExecStatus.OK) {
      st = parser.execute(buf, cut);
      if (st === ExecStatus.UPGRADE) tunnel = cut + parser.consumed;
    }
    if (tunnel !== head.length) wrong.push(cut);
    parser.destroy();
  }
  t.strictSame(wrong, []);
});

t.test('CONNECT request and 101 response upgrade as well', async (t) => {
  const connect = latin1('CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n\x16\x03\x01');
  const p1 = new HttpParser('request', new Recorder(), 8192);
  t.equal(p1.execute(connect), ExecStatus.UPGRADE);
  t.equal(p1.consumed, connect.length - 3);
  p1.destroy();
  const switching = latin1('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n\x81\x00');
  const rec = new Recorder();
  const p2 = new HttpParser('response', rec, 8192);
  t.equal(p2.execute(switching), ExecStatus.UPGRADE);
  t.equal(p2.consumed, switching.length - 2);
  t.equal(rec.events[0]?.event === 'head' && rec.events[0].statusCode, 101);
  p2.destroy();
});
