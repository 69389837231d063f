/**
 * Try-it stays inside the API it is for (docs/portal.md, "Try it"): against a real gateway with a second
 * API, each behind its own recording backend, resource paths with encoded dot segments (`%2e%2e`,
 * `%2E%2e`, `..%2f`), backslashes and doubled slashes are refused with a coded error and reach no
 * backend; a plain path reaches the API's own backend.
 */
import * as http from 'node:http';
import t from 'tap';
import { startTestNode } from '../observability/node-helpers';
import { hiddenField, PORTAL_TOML, req, signIn } from './helpers';

/** A backend that answers 200 and records the request targets it got. */
async function recorder(): Promise<{ port: number; seen: string[]; close: () => Promise<void> }> {
  const seen: string[] = [];
  const s = http.createServer((rq, rs) => {
    seen.push(rq.url ?? '');
    rs.writeHead(200, { 'Content-Type': 'application/json' }).end('{"ok":true}');
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  return { port: (s.address() as { port: number }).port, seen, close: () => new Promise((r) => s.close(() => r())) };
}

const api = (name: string, context: string, port: number): string =>
  `name = "${name}"\ncontext = "${context}"\nversion = "1.0.0"\nstate = "PUBLISHED"\nauth = "none"\nunauthenticated_policy = "Unlimited"\nlabels = ["Default"]\n[endpoints]\nproduction = "http://127.0.0.1:${port}"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;

t.test('encoded dot segments, backslashes and // never leave the API; nothing is sent', async (t) => {
  const mine = await recorder();
  const other = await recorder();
  t.teardown(() => Promise.all([mine.close(), other.close()]));
  const node = await startTestNode(PORTAL_TOML, { mine: api('Mine', '/mine', mine.port), other: api('Other', '/other', other.port) });
  t.teardown(() => node.close());
  const base = `http://127.0.0.1:${node.mgmt}`;
  const cookie = await signIn(base);
  const csrf = hiddenField((await req(`${base}/devportal/applications`, cookie)).text, 'csrf');
  const made = await req(`${base}/devportal/applications`, cookie, { name: 'TryApp', csrf });
  t.equal(made.status, 303, 'an application');
  const tryIt = (path: string): ReturnType<typeof req> =>
    req(`${base}${made.location}/try`, cookie, { csrf, api: 'mine.toml', method: 'GET', path, tryKeyType: 'PRODUCTION' });

  const plain = await tryIt('/items/1');
  t.equal(plain.status, 200, 'a plain path is called');
  t.same(mine.seen, ['/items/1'], "and reaches the API's own backend");

  const outside = [
    '/%2e%2e/%2e%2e/other/1.0.0/x',
    '/%2E%2e/other/1.0.0/x',
    '/..%2f..%2fother/1.0.0/x',
    '/%2e%2e/%2e%2e/token',
    '/../1.0.1/x',
  ];
  const invalid = ['/\\..\\..\\other\\1.0.0\\x', '/%5c..%5c..%5cother', '//other/1.0.0/x', '/a//..//..//other'];
  for (const [paths, code] of [
    [outside, 'TRY_PATH_OUTSIDE_API'],
    [invalid, 'TRY_PATH_INVALID'],
  ] as const) {
    for (const path of paths) {
      const r = await tryIt(path);
      t.equal(r.status, 400, `${JSON.stringify(path)}: refused`);
      t.match(r.text, code, `with ${code}`);
    }
  }
  t.same(other.seen, [], "the other API's backend got nothing");
  t.same(mine.seen, ['/items/1'], "nor did this API's backend");
  t.ok(
    node.lines.some((l) => l.event === 'portal_try_refused' && l.code === 'TRY_PATH_OUTSIDE_API'),
    'refusals are logged',
  );
});
