/**
 * Custom fault templates (spec 002, part 7, rule 4): a file next to deployment.toml replaces the body
 * and the status per combined code, or per base code for every state, from code, message and
 * description; bad entries are reported with file, line and field.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import t from 'tap';
import { BASE_TOML, apiToml, closedPort, echoBackend, HOST, request, startGateway } from './helpers';
import { parseFaultTemplates } from '../../lib/faults/templates';

const TEMPLATES = `
[[template]]
codes = [900906]
status = 404
body = '{"error":{"code":{code},"message":"{message}","detail":"{description}"}}'

[[template]]
bases = [101505]
status = 503
content_type = "text/plain"
body = "backend closed: {code} = {base} + {state}"

[[template]]
bases = [103005]
content_type = "application/xml"
body = "<fault><code>{code}</code><message>{message}</message><status>{status}</status></fault>"
`;

t.test('templates replace body and status, per combined code and per base code', async (t) => {
  const backend = await echoBackend();
  // Accepts, reads the request, then closes without answering: fault "closed" at REQUEST_DONE (101505 + 3).
  const rude = net.createServer((s) => s.once('data', () => s.destroy()));
  await new Promise<void>((r) => rude.listen(0, HOST, () => r()));
  const refused = await closedPort();
  const g = await startGateway(
    BASE_TOML,
    {
      ok: apiToml({ endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/r', ['GET']]] }),
      rude: apiToml({
        name: 'Rude',
        context: '/rude',
        endpoint: `http://127.0.0.1:${(rude.address() as net.AddressInfo).port}`,
        resources: [['/r', ['GET']]],
      }),
      down: apiToml({ name: 'Down', context: '/down', endpoint: `http://127.0.0.1:${refused}`, resources: [['/r', ['GET']]] }),
    },
    { 'fault-templates.toml': TEMPLATES },
  );
  t.teardown(async () => {
    await g.close();
    await backend.close();
    rude.close();
  });

  const n = await request(g.port, '/test/1.0.0/nope', { headers: { Origin: 'https://x.example' } });
  t.equal(n.status, 404, "status replaced (the spec's 403)");
  t.same(n.json(), {
    error: {
      code: 900906,
      message: 'No matching resource found in the API for the given request',
      detail: 'The API has no resource matching the request path',
    },
  });
  t.equal(n.headers['content-type'], 'application/json; charset=UTF-8');
  t.equal(n.headers['access-control-allow-origin'], '*', 'CORS fields stay');

  const c = await request(g.port, '/rude/1.0.0/r');
  t.equal(c.status, 503);
  t.equal(c.headers['content-type'], 'text/plain');
  t.equal(c.body, 'backend closed: 101508 = 101505 + 3', 'a base template covers every state');

  const x = await request(g.port, '/missing');
  t.equal(x.headers['content-type'], 'application/xml');
  t.equal(x.status, 404, "no status given: the code's own");
  t.equal(x.body, '<fault><code>103005</code><message>No matching API</message><status>404</status></fault>');

  const d = await request(g.port, '/down/1.0.0/r');
  t.equal(d.status, 502, 'no template for 101503: the default rendering');
  t.equal(d.json().fault.code, 101503);

  const m = await request(g.port, '/test/1.0.0/r', { method: 'POST' });
  t.equal(m.status, 405, 'codes without a template are untouched');
  t.equal(m.json().fault.code, 103006);

  // reload() re-reads the file.
  fs.writeFileSync(path.join(g.dir, 'fault-templates.toml'), '[[template]]\ncodes = [103006]\nstatus = 400\nbody = "{message}"\n');
  g.gw.reload();
  const m2 = await request(g.port, '/test/1.0.0/r', { method: 'POST' });
  t.equal(m2.status, 400);
  t.equal(m2.body, '"Method not allowed"'.slice(1, -1));
  t.equal(m2.headers.allow, 'GET, HEAD', 'protocol fields stay');
});

t.test('a combined-code template wins over a base template (101508 is 101505 + 3 and also 101508 + 0)', async (t) => {
  const r = parseFaultTemplates(
    '[[template]]\nbases = [101505]\nbody = "base"\n[[template]]\ncodes = [101508]\nbody = "exact"\n',
    'f.toml',
  );
  const facts = { code: 101508, base: 101505, state: 3, status: 502, message: '', description: '' };
  t.equal(r.templates?.find(101508, 101505)?.render(facts).body, 'exact');
  t.equal(r.templates?.find(101507, 101505)?.render(facts).body, 'base');
  t.equal(r.templates?.find(101508, 101508)?.render(facts).body, 'exact', 'connect timeout at state 0 shares the number');
});

t.test('placeholders are escaped for the content type', async (t) => {
  const r = parseFaultTemplates(
    '[[template]]\ncodes = [1]\nbody = \'{"d":"{description}"}\'\n[[template]]\ncodes = [2]\ncontent_type = "text/html"\nbody = "<p>{description}</p>"\n',
    'f.toml',
  );
  t.same(r.diagnostics, []);
  const facts = { code: 1, base: 1, state: -1, status: 500, message: 'm', description: 'say "hi" <b>&\n' };
  const json = r.templates?.find(1, 1)?.render(facts);
  t.same(JSON.parse(json?.body ?? ''), { d: 'say "hi" <b>&\n' });
  const html = r.templates?.find(2, 2)?.render({ ...facts, code: 2, base: 2 });
  t.equal(html?.body, '<p>say &#34;hi&#34; &#60;b&#62;&#38;\n</p>');
});

t.test('bad entries: file, line and field; the good ones still apply', async (t) => {
  const text = [
    '[[template]]', // 1
    'codes = [900906]', // 2
    'body = "ok"', // 3
    '', // 4
    '[[template]]', // 5
    'codes = ["x"]', // 6
    'body = "bad"', // 7
    '', // 8
    '[[template]]', // 9
    'bases = [101504]', // 10
    'status = 99', // 11
    'bodyy = "typo"', // 12
    '', // 13
    '[[template]]', // 14
    'codes = [900906]', // 15
    'body = "second"', // 16
  ].join('\n');
  const r = parseFaultTemplates(text, 'conf/fault-templates.toml');
  const by = (field: string) => r.diagnostics.find((d) => d.field === field);
  t.equal(by('template[1].codes')?.line, 6);
  t.equal(by('template[2].status')?.line, 11);
  t.equal(by('template[2].bodyy')?.level, 'warning');
  t.match(by('template[2].bodyy')?.message, /did you mean "body"/);
  t.equal(by('template[2].body')?.message, 'is required');
  t.match(by('template[3].codes')?.message, /already has template 1 \(line 1\)/);
  t.equal(
    r.templates?.find(900906, 900906)?.render({ code: 900906, base: 900906, state: -1, status: 403, message: '', description: '' }).body,
    'ok',
  );
  t.equal(r.templates?.find(101504, 101504), undefined, 'the invalid entry is skipped');
  const syntax = parseFaultTemplates('[[template]\n', 'x.toml');
  t.equal(syntax.diagnostics[0]?.code, 'API_SYNTAX');
  t.equal(syntax.diagnostics[0]?.line, 1);
});
