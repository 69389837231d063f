/**
 * Script mediation: an API file names a JavaScript module whose onRequest / onResponse run in the worker
 * pool. A script that changes fields and body changes what the backend (or the client) gets; one that
 * answers stops the call; one that throws gives 103065 and the gateway goes on serving. Scripts see no
 * gateway memory and no Node API. (Time and heap limits: script-limits.test.ts.)
 */
import t from 'tap';
import { apiToml, echoBackend, request, startGateway } from '../gateway/helpers';
import { SCRIPTS, TOML, api } from './script-helpers';

t.test('a script that changes fields and the JSON body: the backend gets the changes with a correct Content-Length', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(TOML, { s: api(be, '../scripts/change.js') }, SCRIPTS);
  t.teardown(() => g.close());
  const body = JSON.stringify({ items: [{ price: 3 }, { price: 4 }] });
  const res = await request(g.port, '/s/1.0.0/order', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Remove-Me': 'secret' },
    body,
  });
  t.equal(res.status, 200);
  const seen = be.seen[0];
  t.same(JSON.parse(seen?.body ?? 'null'), { items: [{ price: 3 }, { price: 4 }], total: 7, seenApi: 'Test:1.0.0' });
  const raw = seen?.headers ?? [];
  const get = (n: string): string | undefined => {
    const i = raw.findIndex((h, k) => k % 2 === 0 && h.toLowerCase() === n);
    return i < 0 ? undefined : raw[i + 1];
  };
  t.equal(get('x-mediated'), 'yes');
  t.equal(get('x-method'), 'POST');
  t.equal(get('x-remove-me'), undefined, 'null removes a field');
  t.equal(Number(get('content-length')), Buffer.byteLength(seen?.body ?? ''), 'Content-Length of the new body');
  t.equal(g.gw.mediation.pool.started, true);
});

t.test('a script may answer instead of the backend (status), or let the call through (nothing returned)', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(TOML, { s: api(be, '../scripts/answer.js') }, SCRIPTS);
  t.teardown(() => g.close());
  const denied = await request(g.port, '/s/1.0.0/p?q=1');
  t.equal(denied.status, 403);
  t.same(denied.json(), { denied: '/s/1.0.0/p?q=1' });
  t.equal(be.seen.length, 0);
  const open = await request(g.port, '/s/1.0.0/p', { headers: { 'X-Key': 'open' } });
  t.equal(open.status, 200);
  t.equal(be.seen.length, 1, 'a GET without a body runs the script too');
});

t.test('a script that throws: 103065 (500) naming the error; the gateway serves the next call', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(
    TOML,
    {
      s: api(be, '../scripts/throws.js'),
      ok: apiToml({ context: '/ok', endpoint: `http://127.0.0.1:${be.port}`, resources: [['/*', ['GET']]] }),
    },
    SCRIPTS,
  );
  t.teardown(() => g.close());
  const res = await request(g.port, '/s/1.0.0/x', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  t.equal(res.status, 500);
  t.equal(res.json().fault.code, 103065);
  t.match(res.json().fault.description, /no pizza today/);
  t.equal((await request(g.port, '/ok/1.0.0/x')).status, 200, 'still serving');
  t.equal(be.seen.length, 1);
});

t.test('scripts see no require, no process and cannot compile code from strings', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(TOML, { s: api(be, '../scripts/escape.js') }, SCRIPTS);
  t.teardown(() => g.close());
  const res = await request(g.port, '/s/1.0.0/x', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  t.equal(res.status, 200);
  const seen = JSON.parse(be.seen[0]?.body ?? '{}') as Record<string, string>;
  t.equal(seen.require, 'undefined');
  t.equal(seen.process, 'undefined');
  t.equal(seen.fn, 'blocked');
  t.equal(seen.globalThisKeys, 'console,exports,module', 'only what the context was given');
});

t.test('a script returning an invalid change set: 103065 naming why; a text body is a string', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(TOML, { s: api(be, '../scripts/bad-result.js'), x: api(be, '../scripts/text.js', '/x') }, SCRIPTS);
  t.teardown(() => g.close());
  const res = await request(g.port, '/s/1.0.0/x');
  t.equal(res.json().fault.code, 103065);
  t.match(res.json().fault.description, /invalid field name/);
  const txt = await request(g.port, '/x/1.0.0/x', { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: 'hello' });
  t.equal(txt.status, 200);
  t.equal(be.seen[0]?.body, 'HELLO');
});

t.test('an API naming a missing script is not deployed (API_VALUE)', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(TOML, { s: api(be, '../scripts/none.js') }, SCRIPTS);
  t.teardown(() => g.close());
  t.equal(g.gw.deployed().length, 0);
  const d = g.gw.states()[0]?.diagnostics.find((x) => x.code === 'API_VALUE');
  t.match(d?.message ?? '', /does not exist/);
});

t.test("onResponse: the backend's whole response in, status, fields and body changed on the way to the client", async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(
    `${TOML}[apim.cors]\nenable = true\nallow_origins = "*"\n`,
    { s: api(be, '../scripts/response.js'), f: api(be, '../scripts/response-throws.js', '/f') },
    SCRIPTS,
  );
  t.teardown(() => g.close());
  const res = await request(g.port, '/s/1.0.0/menu?x=1', { headers: { Origin: 'http://a.example' } });
  t.equal(res.status, 203);
  t.same(res.json(), { wrapped: '/menu?x=1', path: '/s/1.0.0/menu?x=1' });
  t.equal(res.headers['x-backend-method'], 'GET');
  t.equal(res.headers['x-was'], '200');
  t.equal(res.headers['content-length'], String(Buffer.byteLength(res.body)));
  t.equal(res.all('access-control-allow-origin').length, 1, 'CORS fields once');
  const failed = await request(g.port, '/f/1.0.0/x', { headers: { Origin: 'http://a.example' } });
  t.equal(failed.status, 500);
  t.equal(failed.json().fault.code, 103065);
  t.match(failed.json().fault.description, /bad response/);
  t.equal(failed.all('access-control-allow-origin').length, 1, 'CORS fields once on the fault');
});
