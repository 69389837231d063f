/**
 * A response hook limited to some statuses (ResponseHook.statuses) and its Resend answer: only the named
 * statuses are gathered, the others stream through; a Resend sends the same request again with new
 * fields and the held body, on a pooled connection; a streamed body cannot be resent (101510 + state).
 * The gateway's backend security stands on this (docs/apis.md, "Backend security").
 */
import t from 'tap';
import { targetFromUrl, type BufferedResponse, type RouteFn, type SourceRequest } from '../../lib/transport';
import { rawBackend, type BackendConn } from '../helpers/backend';
import { RawClient } from '../helpers/client';
import { checkTransitions, startTransport } from '../helpers/transport';
import type { Message } from '../helpers/wire';

/** 401 unless the request carries `X-Pass: yes`; then 200 with a chunked body. */
async function gatekeeper(): Promise<{ url: string; seen: Message[]; close(): Promise<void> }> {
  const seen: Message[] = [];
  const b = await rawBackend({
    onRequest: (c: BackendConn, req: Message) => {
      seen.push(req);
      if (req.headers['x-pass'] !== 'yes') c.respond(401, 'no', 'WWW-Authenticate: Test\r\n');
      else
        c.write(
          Buffer.from(
            `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nok!\r\n${req.body.length.toString(16)}\r\n${req.body.toString('latin1')}\r\n0\r\n\r\n`,
            'latin1',
          ),
        );
    },
  });
  return { url: b.url, seen, close: () => b.close() };
}

function router(url: string, gathered: BufferedResponse[], o: { holdBody: boolean }): RouteFn {
  const target = targetFromUrl(url);
  return async (req: SourceRequest) => {
    const body = o.holdBody && req.readBody !== undefined ? await req.readBody(1024) : undefined;
    return {
      target,
      ...(body?.ok === true ? { body: body.body } : {}),
      bufferResponse: {
        limit: 1024,
        statuses: [401],
        handle: (res: BufferedResponse) => {
          gathered.push(res);
          return gathered.length === 1 ? { resend: ['Host', 'x', 'X-Pass', 'yes'] } : { status: 599, body: 'twice' };
        },
      },
    };
  };
}

t.test('a 401 gathered and resent with new fields and the held body; the 200 streams through', async (t) => {
  const be = await gatekeeper();
  t.teardown(() => be.close());
  const gathered: BufferedResponse[] = [];
  const h = await startTransport(t, router(be.url, gathered, { holdBody: true }));
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello');
  const r = await c.finalResponse(5000);
  t.equal(r.status, 200);
  t.ok(r.chunked, 'not gathered: streamed with its chunked framing');
  t.equal(r.body.toString(), 'ok!hello', 'the second answer reached the client');
  t.equal(gathered.length, 1, 'only the 401 was gathered');
  t.equal(gathered[0]?.status, 401);
  t.equal(be.seen.length, 2);
  t.equal(be.seen[1]?.body.toString(), 'hello', 'the held body sent again');
  t.equal(be.seen[1]?.headers['content-length'], '5');
  t.equal(be.seen[1]?.headers['x-pass'], 'yes', 'with the new fields');
  t.equal(h.transport.stats.targetsCreated, 1, 'sent again on the pooled connection');
  // The client connection goes on; this time the hook answers the 401 itself.
  await c.write('GET /b HTTP/1.1\r\nHost: x\r\n\r\n');
  const r2 = await c.finalResponse(5000, 1);
  t.equal(r2.status, 599);
  t.equal(r2.body.toString(), 'twice');
  t.same(h.faults, []);
});

t.test('a resend of a streamed body is refused: 101510 + state', async (t) => {
  const be = await gatekeeper();
  t.teardown(() => be.close());
  const gathered: BufferedResponse[] = [];
  const h = await startTransport(t, router(be.url, gathered, { holdBody: false }));
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello');
  const r = await c.finalResponse(5000);
  t.equal(r.status, 500);
  t.equal(be.seen.length, 1, 'not sent again');
  const f = await h.waitFaults(1, 2000);
  t.equal(f[0]?.base, 101510);
});

checkTransitions(t);
