/**
 * An API's OpenAPI document in the catalogue (docs/portal.md, "The catalogue"): the API page renders the
 * demo API's document (operations, parameters, request body, responses with their $refs followed,
 * security), the gateway URLs as servers; /devportal/apis/<id>/openapi.json serves it as an attachment
 * with those servers; every value of a hostile document is escaped; an API the visitor may not see, one
 * naming no document, and one whose document leaves apis_dir give 404.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { startPortalNode } from './helpers';

const HOSTILE = {
  openapi: '3.0.0',
  info: { title: '<script>alert("title")</script>', version: '1', description: '<img src=x onerror=alert(1)>' },
  security: [{ oauth: ['<b>scope</b>'] }],
  paths: {
    '/x/<script>': {
      post: {
        summary: '<script>alert("summary")</script>',
        parameters: [{ name: '<script>p</script>', in: 'query', description: '"quoted" & <i>', schema: { type: 'string' } }],
        requestBody: { content: { 'text/<script>': {} } },
        responses: { '<script>': { description: '<script>alert("response")</script>' } },
      },
    },
  },
};

const API = (name: string, context: string, definition: string, state = 'PUBLISHED'): string =>
  `name = "${name}"\ncontext = "${context}"\nversion = "1"\nstate = "${state}"\nauth = "none"\ndefinition = ${JSON.stringify(definition)}\n[endpoints]\nproduction = "http://127.0.0.1:9/v1"\n[[resources]]\npath = "/x"\nmethods = ["POST"]\n`;

t.test('the demo API page renders its OpenAPI document; the download has the gateway URL as server', async (t) => {
  const node = await startPortalNode();
  t.teardown(() => node.close());
  const gatewayUrl = `http://127.0.0.1:${node.gw}/pizzashack/1.0.0`;

  const r = await fetch(`${node.base}/devportal/apis/demo.toml`);
  t.equal(r.status, 200);
  const html = await r.text();
  t.match(html, /<h2 id="openapi">OpenAPI document<\/h2>/);
  t.match(html, /<dt>Title<\/dt><dd>PizzaShack<\/dd><dt>Version<\/dt><dd>1\.0\.0<\/dd><dt>OpenAPI<\/dt><dd>3\.0\.3<\/dd>/, 'info');
  t.match(html, /<p>7 operations\.<\/p>/, 'every operation of the document');
  t.match(
    html,
    /<span class="method">GET<\/span> <code>\/menu\/\{id\}<\/code><\/h3>\n<p class="summary">One pizza<\/p>/,
    'method, path and summary',
  );
  t.match(
    html,
    /<td><code>id<\/code><\/td><td>path<\/td><td>yes<\/td><td>integer<\/td><td>The pizza&#39;s number on the menu<\/td>/,
    'a Path Item parameter on its operation',
  );
  t.match(html, /<td>404<\/td><td>No pizza with this number<\/td><td><code>application\/json<\/code><\/td>/, 'a response given by $ref');
  t.match(
    html,
    /<h4>Request body \(required\)<\/h4><p><code>application\/json<\/code>: The order, any JSON object/,
    'request body media types',
  );
  t.match(html, /<td>200<\/td><td>Every pizza on the menu<\/td>/);
  t.match(
    html,
    new RegExp(`<h3>Servers</h3><ul><li>Gateway \\(HTTP\\): <code>${gatewayUrl.replace(/\./g, '\\.')}</code></li></ul>`),
    'the gateway URL, not the backend',
  );
  t.notMatch(html, /127\.0\.0\.1:9000/, "the document's own server (the backend) is not shown");
  t.match(html, /<a href="\/devportal\/apis\/demo\.toml\/openapi\.json" download>Download the OpenAPI document<\/a>/);

  const d = await fetch(`${node.base}/devportal/apis/demo.toml/openapi.json`);
  t.equal(d.status, 200);
  t.equal(d.headers.get('content-type'), 'application/json; charset=utf-8');
  t.equal(d.headers.get('content-disposition'), 'attachment; filename="PizzaShack-1.0.0.openapi.json"');
  t.equal(d.headers.get('x-content-type-options'), 'nosniff');
  const text = await d.text();
  t.equal(Number(d.headers.get('content-length')), Buffer.byteLength(text));
  const doc = JSON.parse(text) as { openapi: string; servers: unknown; paths: Record<string, unknown>; components: unknown };
  t.same(doc.servers, [{ url: gatewayUrl, description: 'Gateway (HTTP)' }], 'servers: the gateway URLs');
  const shipped = JSON.parse(fs.readFileSync(path.join(node.dir, 'apis', 'pizzashack.openapi.json'), 'utf8')) as typeof doc;
  t.same(doc.paths, shipped.paths, 'the paths as written');
  t.same(doc.components, shipped.components);

  const none = await fetch(`${node.base}/devportal/apis/pizzashack-secured.toml/openapi.json`);
  t.equal(none.status, 404, 'an API naming no document');
  t.match(await none.text(), /This API names no OpenAPI document/);
  const secured = await (await fetch(`${node.base}/devportal/apis/pizzashack-secured.toml`)).text();
  t.notMatch(secured, /OpenAPI document/, 'no section for an API without one');
  t.equal((await fetch(`${node.base}/devportal/apis/nope.toml/openapi.json`)).status, 404, 'no such API');
  t.equal(
    (await fetch(`${node.base}/devportal/apis/demo.toml/openapi.yaml`, { redirect: 'manual' })).status,
    303,
    'no other route: the sign-in',
  );
});

t.test('a hostile document is escaped everywhere; path servers are dropped from the download; YAML is served as JSON', async (t) => {
  const node = await startPortalNode();
  t.teardown(() => node.close());
  const apis = path.join(node.dir, 'apis');
  const hostile = {
    ...HOSTILE,
    paths: {
      ...HOSTILE.paths,
      '/y': {
        servers: [{ url: 'http://backend.internal' }],
        get: { servers: [{ url: 'http://backend.internal' }], responses: { 200: { description: 'ok' } } },
      },
    },
  };
  fs.writeFileSync(path.join(apis, 'hostile.openapi.yaml'), `# YAML: JSON is YAML 1.2\n${JSON.stringify(hostile, null, 1)}`);
  fs.writeFileSync(path.join(apis, 'hostile.toml'), API('Hostile', '/hostile', 'hostile.openapi.yaml'));

  const r = await fetch(`${node.base}/devportal/apis/hostile.toml`);
  t.equal(r.status, 200);
  const html = await r.text();
  t.notMatch(html, /<script|<img|<b>scope|<i>/, 'no markup of the document reaches the page');
  t.match(html, /<dd>&#60;script&#62;alert\(&#34;title&#34;\)&#60;\/script&#62;<\/dd>/, 'title escaped');
  t.match(html, /<p>&#60;img src=x onerror=alert\(1\)&#62;<\/p>/, 'description escaped');
  t.match(html, /<code>\/x\/&#60;script&#62;<\/code>/, 'path escaped');
  t.match(html, /<p class="summary">&#60;script&#62;alert\(&#34;summary&#34;\)&#60;\/script&#62;<\/p>/, 'summary escaped');
  t.match(
    html,
    /<td><code>&#60;script&#62;p&#60;\/script&#62;<\/code><\/td><td>query<\/td><td>no<\/td><td>string<\/td><td>&#34;quoted&#34; &#38; &#60;i&#62;<\/td>/,
    'parameter escaped',
  );
  t.match(html, /<code>text\/&#60;script&#62;<\/code>/, 'media type escaped');
  t.match(html, /<td>&#60;script&#62;<\/td><td>&#60;script&#62;alert\(&#34;response&#34;\)&#60;\/script&#62;<\/td>/, 'response escaped');
  t.match(html, /<h4>Security<\/h4><p>oauth \(scopes: &#60;b&#62;scope&#60;\/b&#62;\)<\/p>/, "the document's security, escaped");
  t.match(r.headers.get('content-security-policy') ?? '', /default-src 'none'/);

  const d = await fetch(`${node.base}/devportal/apis/hostile.toml/openapi.json`);
  t.equal(d.status, 200);
  t.equal(d.headers.get('content-disposition'), 'attachment; filename="Hostile-1.openapi.json"');
  const doc = (await d.json()) as { info: { title: string }; paths: Record<string, Record<string, unknown>> };
  t.equal(doc.info.title, HOSTILE.info.title, 'the JSON keeps the values as written (it is data, not a page)');
  t.equal(doc.paths['/y']?.servers, undefined, "a path item's servers (the backend) dropped");
  t.equal((doc.paths['/y']?.get as Record<string, unknown>).servers, undefined, "an operation's servers dropped");
});

t.test('only documents of APIs the visitor may see, inside apis_dir', async (t) => {
  const node = await startPortalNode();
  t.teardown(() => node.close());
  const apis = path.join(node.dir, 'apis');
  const doc = fs.readFileSync(path.join(apis, 'pizzashack.openapi.json'), 'utf8');
  fs.writeFileSync(path.join(node.dir, 'secret.json'), doc);
  fs.writeFileSync(path.join(apis, 'escape.toml'), API('Escape', '/escape', '../secret.json'));
  fs.writeFileSync(path.join(apis, 'absolute.toml'), API('Absolute', '/absolute', path.join(node.dir, 'secret.json')));
  fs.symlinkSync(path.join(node.dir, 'secret.json'), path.join(apis, 'linked.json'));
  fs.writeFileSync(path.join(apis, 'linked.toml'), API('Linked', '/linked', 'linked.json'));
  fs.writeFileSync(path.join(apis, 'blocked.toml'), API('Blocked', '/blocked', 'pizzashack.openapi.json', 'BLOCKED'));
  fs.mkdirSync(path.join(apis, 'created'));
  fs.writeFileSync(path.join(apis, 'created', 'draft.toml'), API('Draft', '/draft', 'draft.json'));
  fs.writeFileSync(path.join(apis, 'created', 'draft.json'), doc);

  for (const id of ['escape.toml', 'absolute.toml', 'linked.toml', 'blocked.toml', 'created:draft.toml']) {
    const page = await fetch(`${node.base}/devportal/apis/${encodeURIComponent(id)}`);
    t.equal(page.status, 404, `${id}: not in the catalogue`);
    const d = await fetch(`${node.base}/devportal/apis/${encodeURIComponent(id)}/openapi.json`);
    t.equal(d.status, 404, `${id}: no download`);
    t.notMatch(await d.text(), /PizzaShack/, `${id}: nothing of the document`);
  }
  const catalogue = await (await fetch(`${node.base}/devportal`)).text();
  t.notMatch(catalogue, /Escape|Absolute|Linked|Blocked|Draft/, 'none of them listed');
  t.match(catalogue, /PizzaShack/, 'the demo API still is');
});
