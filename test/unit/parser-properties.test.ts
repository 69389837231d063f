/**
 * Property-based tests (fast-check) of lib/transport/parser.ts, the llhttp-wasm adapter: whatever bytes
 * arrive and however they are split across reads, the adapter never throws, every failure is a coded
 * llhttp error (HPE_*), and one request stream has exactly one reading (the smuggling class of RFC 9112
 * section 11.2 is two readings of one stream). fast-check prints the seed and the shrunk counterexample
 * on failure; the suite runs a fixed seed (test/helpers/fc-seed.ts: `FC_SEED=<n>` replays a run, `FC_SEED=random`
 * explores).
 */
import t from 'tap';
import fc from 'fast-check';
import { ExecStatus, HttpParser } from '../../lib/transport/parser';
import { latin1, parseCut, Recorder, type EventRecord } from './helpers/parser-recorder';
import { fcParams } from '../helpers/fc-seed';

const params = fcParams;

/** The outcome of a parse: 'OK', or the first non-OK status with its llhttp error name. */
const CODED = /^(OK|UPGRADE.*|ERROR HPE_[A-Z_]+)$/;

/** Sorted, distinct cut points strictly inside [1, length). */
const cutsOf = (length: number, maxCuts: number): fc.Arbitrary<number[]> =>
  length < 2
    ? fc.constant([])
    : fc
        .uniqueArray(fc.integer({ min: 1, max: length - 1 }), { maxLength: Math.min(maxCuts, length - 1) })
        .map((a) => a.sort((x, y) => x - y));

// ---- a model of valid requests ----------------------------------------------------------------------

interface RequestModel {
  method: string;
  url: string;
  /** name, value pairs as written (values have no leading or trailing whitespace). */
  headers: [string, string][];
  body: string;
  framing: 'none' | 'length' | 'chunked';
  /** Chunk sizes when chunked (their sum is body.length). */
  chunks: number[];
}

const TCHAR = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~";
const token = fc.string({ unit: fc.constantFrom(...TCHAR), minLength: 1, maxLength: 12 });
/** Field value: visible ASCII and obs-text (latin1 0x80-0xff), inner spaces and tabs, no outer whitespace. */
const vchar = fc.oneof(
  fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
  fc.integer({ min: 0x80, max: 0xff }).map((c) => String.fromCharCode(c)),
);
const fieldValue = fc.oneof(
  fc.constant(''),
  fc
    .tuple(vchar, fc.array(fc.oneof(vchar, fc.constantFrom(' ', '\t')), { maxLength: 30 }), vchar)
    .map(([a, mid, b]) => a + mid.join('') + b),
  vchar,
);
/** Header names that change framing or connection handling are left to the generator's own choice. */
const RESERVED = /^(content-length|transfer-encoding|connection|upgrade|host|expect|proxy-connection|keep-alive|te|trailer)$/i;
const headerName = token.filter((n) => !RESERVED.test(n));
const PATH_CHAR = "abcdefghijklmnopqrstuvwxyz0123456789-._~/%=&?!$'()*+,;:@";
const url = fc.string({ unit: fc.constantFrom(...PATH_CHAR), maxLength: 40 }).map((s) => `/${s}`);
const bodyText = fc.string({ unit: fc.integer({ min: 0, max: 255 }).map((c) => String.fromCharCode(c)), maxLength: 80 });

const requestModel: fc.Arbitrary<RequestModel> = fc
  .record({
    method: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'),
    url,
    headers: fc.array(fc.tuple(headerName, fieldValue), { maxLength: 8 }),
    body: bodyText,
    framing: fc.constantFrom('none', 'length', 'chunked') as fc.Arbitrary<RequestModel['framing']>,
    chunkSeed: fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 10 }),
  })
  .map(({ method, url, headers, body, framing, chunkSeed }) => {
    if (framing === 'none') body = '';
    const chunks: number[] = [];
    if (framing === 'chunked') {
      let left = body.length;
      for (let i = 0; left > 0; i++) {
        const n = Math.min(left, chunkSeed[i % chunkSeed.length]!);
        chunks.push(n);
        left -= n;
      }
    }
    return { method, url, headers, body, framing, chunks };
  });

function serialise(m: RequestModel): Buffer {
  let head = `${m.method} ${m.url} HTTP/1.1\r\nHost: h\r\n`;
  for (const [n, v] of m.headers) head += `${n}: ${v}\r\n`;
  if (m.framing === 'length') head += `Content-Length: ${m.body.length}\r\n`;
  if (m.framing === 'chunked') head += 'Transfer-Encoding: chunked\r\n';
  head += '\r\n';
  let body = m.body;
  if (m.framing === 'chunked') {
    body = '';
    let at = 0;
    m.chunks.forEach((n, i) => {
      body += `${i % 2 === 0 ? n.toString(16) : n.toString(16).toUpperCase()}\r\n${m.body.slice(at, at + n)}\r\n`;
      at += n;
    });
    body += '0\r\n\r\n';
  }
  return latin1(head + body);
}

/** What the adapter must report for a model: method, target, every field in order, body bytes. */
function expectedReading(m: RequestModel): unknown[] {
  const out: unknown[] = [];
  const headers = ['Host', 'h', ...m.headers.flat()];
  if (m.framing === 'length') headers.push('Content-Length', String(m.body.length));
  if (m.framing === 'chunked') headers.push('Transfer-Encoding', 'chunked');
  out.push({ method: m.method, url: m.url, headers });
  if (m.body.length > 0) out.push({ body: m.body });
  out.push({ complete: true });
  return out;
}

function reading(events: readonly EventRecord[]): unknown[] {
  return events.map((e) =>
    e.event === 'head' ? { method: e.method, url: e.url, headers: e.headers } : e.event === 'body' ? { body: e.text } : { complete: true },
  );
}

// ---- properties ---------------------------------------------------------------------------------------

t.test('random bytes: never a throw, always a parse or a coded error, the same however split', async (t) => {
  const prefix = fc.constantFrom(
    '',
    'GET / HTTP/1.1\r\n',
    'POST /x HTTP/1.1\r\nHost: h\r\n',
    'PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n',
  );
  const input = fc.tuple(prefix, fc.uint8Array({ maxLength: 300 })).map(([p, bytes]) => Buffer.concat([latin1(p), Buffer.from(bytes)]));
  const withCuts = input.chain((buf) => fc.tuple(fc.constant(buf), cutsOf(buf.length, 12), fc.boolean()));
  let errors = 0;
  fc.assert(
    fc.property(withCuts, ([buf, cuts, finish]) => {
      const whole = parseCut('request', buf, [], undefined, 16384, finish);
      const split = parseCut('request', buf, cuts, undefined, 16384, finish);
      for (const r of [whole, split]) {
        if (!CODED.test(r.outcome.replace(/^finish /, ''))) throw new Error(`uncoded outcome ${JSON.stringify(r.outcome)}`);
      }
      if (whole.outcome !== 'OK') errors++;
      if (whole.outcome !== split.outcome) throw new Error(`outcome ${whole.outcome} whole, ${split.outcome} cut at ${cuts.join(',')}`);
      if (JSON.stringify(whole.events) !== JSON.stringify(split.events)) throw new Error(`different events cut at ${cuts.join(',')}`);
    }),
    params(400),
  );
  t.ok(errors > 0, `random input did reach the error path (${errors} coded errors)`);
});

t.test('random bytes then more bytes: a failed parser stays failed, coded, and calls back no more', async (t) => {
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 1, maxLength: 200 }), fc.uint8Array({ maxLength: 100 }), (a, b) => {
      const rec = new Recorder();
      const p = new HttpParser('request', rec, 16384);
      try {
        const first = p.execute(Buffer.from(a));
        if (first === ExecStatus.ERROR) {
          if (!/^HPE_/.test(p.errorName)) throw new Error(`error without a code: ${p.errorName}`);
          const before = rec.events.length;
          if (p.execute(Buffer.from(b)) !== ExecStatus.ERROR) throw new Error('a failed parser accepted more bytes');
          if (rec.events.length !== before) throw new Error('a failed parser called back');
        }
      } finally {
        p.destroy();
      }
    }),
    params(300),
  );
  t.pass('no throw');
});

t.test('valid requests: every split point gives the unsplit reading, and it is the model', async (t) => {
  let checked = 0;
  fc.assert(
    fc.property(requestModel, (m) => {
      const buf = serialise(m);
      const want = expectedReading(m);
      const whole = parseCut('request', buf, []);
      if (whole.outcome !== 'OK') throw new Error(`valid request refused: ${whole.outcome}\n${buf.toString('latin1')}`);
      if (JSON.stringify(reading(whole.events)) !== JSON.stringify(want))
        throw new Error(`reading differs from the model: ${JSON.stringify(reading(whole.events))}`);
      const wholeJson = JSON.stringify(whole.events);
      for (let cut = 1; cut < buf.length; cut++) {
        const split = parseCut('request', buf, [cut]);
        checked++;
        if (split.outcome !== 'OK' || JSON.stringify(split.events) !== wholeJson) {
          throw new Error(`cut at ${cut}: ${split.outcome} ${JSON.stringify(reading(split.events))}`);
        }
      }
    }),
    params(200),
  );
  t.ok(checked > 1000, `${checked} split parses compared`);
});

t.test('pipelined mixtures split at random points: one reading, the models in order', async (t) => {
  const stream = fc.array(requestModel, { minLength: 2, maxLength: 6 }).chain((ms) => {
    const buf = Buffer.concat(ms.map(serialise));
    return fc.tuple(fc.constant(ms), fc.constant(buf), cutsOf(buf.length, 40));
  });
  fc.assert(
    fc.property(stream, ([models, buf, cuts]) => {
      const want = models.flatMap(expectedReading);
      const whole = parseCut('request', buf, []);
      const split = parseCut('request', buf, cuts);
      if (whole.outcome !== 'OK' || split.outcome !== 'OK') throw new Error(`refused: ${whole.outcome} / ${split.outcome}`);
      const a = reading(whole.events);
      const b = reading(split.events);
      if (JSON.stringify(a) !== JSON.stringify(want)) throw new Error(`unsplit reading differs from the model: ${JSON.stringify(a)}`);
      if (JSON.stringify(b) !== JSON.stringify(want)) throw new Error(`cut at ${cuts.join(',')}: ${JSON.stringify(b)}`);
      // Head sizes too: a head size that depends on the reads would move a limit.
      if (JSON.stringify(whole.events) !== JSON.stringify(split.events)) throw new Error(`events differ cut at ${cuts.join(',')}`);
    }),
    params(300),
  );
  t.pass('one reading');
});

t.test('pipelined stream with one corrupted byte: the split parse fails or reads exactly as the unsplit one', async (t) => {
  const stream = fc.array(requestModel, { minLength: 2, maxLength: 4 }).chain((ms) => {
    const buf = Buffer.concat(ms.map(serialise));
    return fc.tuple(
      fc.constant(buf),
      fc.integer({ min: 0, max: buf.length - 1 }),
      fc.integer({ min: 0, max: 255 }),
      cutsOf(buf.length, 20),
    );
  });
  fc.assert(
    fc.property(stream, ([original, at, byte, cuts]) => {
      const buf = Buffer.from(original);
      buf[at] = byte;
      const whole = parseCut('request', buf, []);
      const split = parseCut('request', buf, cuts);
      if (!CODED.test(whole.outcome) || !CODED.test(split.outcome)) throw new Error(`uncoded: ${whole.outcome} / ${split.outcome}`);
      if (whole.outcome !== split.outcome) throw new Error(`outcome ${whole.outcome} whole, ${split.outcome} cut at ${cuts.join(',')}`);
      if (JSON.stringify(whole.events) !== JSON.stringify(split.events)) throw new Error(`two readings, cut at ${cuts.join(',')}`);
    }),
    params(300),
  );
  t.pass('one reading');
});
