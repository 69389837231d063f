/**
 * The SDKs of the developer portal (lib/sdk, docs/self-service.md "SDKs"), downloaded from a whole node
 * for the demo API behind OAuth (pizzashack-secured) and run against its gateway with a token:
 * the JavaScript client (Node.js) answers 200 with the menu; the Java SDK compiles with javac, under the
 * `[apim.sdk]` packages, and its client answers 200; the JMeter plan runs headless with Debian's jmeter
 * with 0 errors. Languages configured but not built are listed, not offered. Each tool's absence skips
 * its part with the reason.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { readZip } from '../../lib/import/zip';
import { generateSdk } from '../../lib/sdk';
import { hidden, PORTAL_TOML, req, signIn, startPortalNode } from '../portal/helpers';
import { jmeterMissing, runJMeter } from './jmeter-run';

const run = promisify(execFile);
const JAVAC = '/usr/bin/javac';
const JAVA = '/usr/bin/java';

const SDK_TOML = `${PORTAL_TOML}[apim.sdk]\ngroup_id = "com.example.pizza"\nartifact_id = "pizza-client"\nmodel_package = "com.example.pizza.model"\napi_package = "com.example.pizza.api"\nsupported_languages = ["java", "javascript", "jmeter", "android"]\n`;

function unpack(zip: Buffer, into: string): string[] {
  const files = readZip(zip, 'sdk');
  for (const [name, data] of files) {
    const f = path.join(into, name);
    fs.mkdirSync(path.dirname(f), { recursive: true });
    fs.writeFileSync(f, data);
  }
  return [...files.keys()].sort();
}

t.test('SDKs of the demo API call it through the gateway', async (t) => {
  const node = await startPortalNode(SDK_TOML);
  t.teardown(() => node.close());
  const base = node.base;
  // The secured demo API with the PizzaShack document beside it (the portal reads API files at each page).
  const file = path.join(node.dir, 'apis', 'pizzashack-secured.toml');
  fs.writeFileSync(
    file,
    fs.readFileSync(file, 'utf8').replace('auth = "oauth2"', 'auth = "oauth2"\ndefinition = "pizzashack.openapi.json"'),
  );
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-sdk-'));
  t.teardown(() => fs.rmSync(work, { recursive: true, force: true }));

  // A token of a subscribed application, through the developer portal.
  const cookie = await signIn(base);
  const csrf = hidden((await req(`${base}/devportal/applications`, cookie)).text, 'csrf');
  const app = await req(`${base}/devportal/applications`, cookie, { csrf, name: 'SdkApp', description: '' });
  const appPath = app.location;
  await req(`${base}${appPath}/keys`, cookie, { csrf, keyType: 'PRODUCTION' });
  const page = (await req(`${base}${appPath}`, cookie)).text;
  const key = /Consumer key: <code[^>]*>([^<]+)<\/code>/.exec(page)?.[1] ?? '';
  const secret = /id="consumer-secret">([^<]+)</.exec(page)?.[1] ?? '';
  await req(`${base}/devportal/subscribe`, cookie, {
    csrf,
    application: decodeURIComponent(appPath.split('/').pop() ?? ''),
    api: 'pizzashack-secured.toml',
    tier: 'Gold',
  });
  const tr = await fetch(`${base}/oauth2/token`, {
    method: 'POST',
    headers: {
      Authorization: `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`,
      'Content-Type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials',
  });
  const token = ((await tr.json()) as { access_token: string }).access_token;
  t.ok(token, 'a token');

  const apiPage = (await req(`${base}/devportal/apis/pizzashack-secured.toml`)).text;
  t.match(apiPage, /href="\/devportal\/apis\/pizzashack-secured\.toml\/sdk\/javascript"/, 'javascript offered');
  t.match(apiPage, /sdk\/java"/);
  t.match(apiPage, /sdk\/jmeter"/);
  t.match(apiPage, /Not built by throughway: android/, 'a language not built is listed');
  t.equal((await req(`${base}/devportal/apis/pizzashack-secured.toml/sdk/android`)).status, 404, 'and not offered');
  const download = async (lang: string): Promise<Buffer> => {
    const r = await fetch(`${base}/devportal/apis/pizzashack-secured.toml/sdk/${lang}`);
    t.equal(r.status, 200, `${lang} downloaded`);
    t.equal(r.headers.get('content-type'), 'application/zip');
    return Buffer.from(await r.arrayBuffer());
  };

  t.test('javascript: an ES module client with types', async (t) => {
    const dir = path.join(work, 'js');
    const files = unpack(await download('javascript'), dir);
    t.same(files, ['README.md', 'index.d.ts', 'index.js', 'package.json']);
    const readme = fs.readFileSync(path.join(dir, 'README.md'), 'utf8');
    t.match(readme, /new PizzaShackSecuredClient\(\{ token \}\)/, 'the README passes a token it declares');
    t.notMatch(readme, /process\.env/, 'the README runs in a browser too (no process.env)');
    const dts = fs.readFileSync(path.join(dir, 'index.d.ts'), 'utf8');
    t.match(dts, /export interface Pizza \{/, 'the schemas as interfaces');
    t.match(dts, /getOrder\(params: GetOrderParams, body\?: unknown\): Promise<ApiResponse>;/, 'typed operations');
    t.equal(JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).name, 'pizza-client', '[apim.sdk] artifact_id');
    fs.writeFileSync(
      path.join(dir, 'call.mjs'),
      `import { PizzaShackSecuredClient } from './index.js';
const c = new PizzaShackSecuredClient({ token: process.env.TOKEN });
const menu = await c.getMenu();
const order = await c.getOrder({ orderId: '42' });
const none = await new PizzaShackSecuredClient().getMenu();
console.log(JSON.stringify({ menu: menu.status, items: Array.isArray(menu.data) ? menu.data.length : -1, order: order.status, orderId: order.data.orderId, none: none.status }));
`,
    );
    const out = await run(process.execPath, [path.join(dir, 'call.mjs')], { env: { ...process.env, TOKEN: token }, timeout: 30_000 });
    const r = JSON.parse(out.stdout) as { menu: number; items: number; order: number; orderId: string; none: number };
    t.equal(r.menu, 200, 'the client calls the demo API through the gateway with the token');
    t.ok(r.items > 0, 'the menu');
    t.equal(r.order, 200);
    t.equal(r.orderId, '42', 'path parameters');
    t.equal(r.none, 401, 'without a token the gateway refuses');
  });

  t.test(
    'java: sources under the packages, a pom naming the ids, compiled by javac and called',
    { skip: fs.existsSync(JAVAC) ? false : `no javac at ${JAVAC} (a JDK)` },
    async (t) => {
      const dir = path.join(work, 'java');
      const files = unpack(await download('java'), dir);
      t.ok(files.includes('src/main/java/com/example/pizza/api/PizzaShackSecuredApi.java'), 'the API class in api_package');
      t.ok(files.includes('src/main/java/com/example/pizza/model/Pizza.java'), 'the models in model_package');
      const pom = fs.readFileSync(path.join(dir, 'pom.xml'), 'utf8');
      t.match(pom, /<groupId>com\.example\.pizza<\/groupId>/, 'group_id');
      t.match(pom, /<artifactId>pizza-client<\/artifactId>/, 'artifact_id');
      fs.writeFileSync(
        path.join(dir, 'Main.java'),
        `import com.example.pizza.api.*;
public class Main {
  public static void main(String[] a) throws Exception {
    PizzaShackSecuredApi api = new PizzaShackSecuredApi(null, System.getenv("TOKEN"));
    ApiResponse r = api.getMenu();
    ApiResponse o = api.addOrder("{\\"pizza\\":\\"Margherita\\"}");
    System.out.println(r.getStatus() + " " + o.getStatus());
  }
}
`,
      );
      const sources = [...files.filter((f) => f.endsWith('.java')).map((f) => path.join(dir, f)), path.join(dir, 'Main.java')];
      await run(JAVAC, ['-d', path.join(dir, 'out'), ...sources], { timeout: 120_000 });
      const out = await run(JAVA, ['-cp', path.join(dir, 'out'), 'Main'], { env: { ...process.env, TOKEN: token }, timeout: 60_000 });
      t.equal(out.stdout.trim(), '200 201', 'the Java client calls the API through the gateway');
    },
  );

  t.test(
    'jmeter: the plan runs headless against the gateway with 0 errors',
    { skip: jmeterMissing() ?? (fs.existsSync(JAVAC) ? false : `no javac at ${JAVAC}`) },
    async (t) => {
      const dir = path.join(work, 'jmeter');
      unpack(await download('jmeter'), dir);
      const plan = fs.readFileSync(path.join(dir, 'plan.jmx'), 'utf8');
      t.equal((plan.match(/<HTTPSamplerProxy /g) ?? []).length, 5, 'one sampler per operation the gateway serves');
      const results = path.join(dir, 'results.jtl');
      const r = await runJMeter(
        dir,
        [
          '-n',
          '-t',
          path.join(dir, 'plan.jmx'),
          `-Jtoken=${token}`,
          '-Jjmeter.save.saveservice.output_format=csv',
          '-Jjmeter.save.saveservice.print_field_names=true',
          '-l',
          results,
          '-j',
          path.join(dir, 'jmeter.log'),
        ],
        JAVAC,
        JAVA,
      );
      t.comment(
        `run by ${r.via === 'jmeter' ? 'jmeter' : "JMeter's NewDriver through the launcher (Debian's xstream refuses JMeter 2.13's classes)"}`,
      );
      t.match(r.output, /Err:\s+0 \(0\.00%\)/, "JMeter's summary: 0 errors");
      const rows = fs.readFileSync(results, 'utf8').trim().split('\n');
      const header = (rows[0] ?? '').split(',');
      const ok = header.indexOf('success');
      const code = header.indexOf('responseCode');
      const samples = rows.slice(1).map((x) => x.split(','));
      t.equal(samples.length, 5, 'every operation was called');
      t.same(
        samples.filter((x) => x[ok] !== 'true').map((x) => x[code]),
        [],
        'every sample succeeded',
      );
      t.same([...new Set(samples.map((x) => x[code]))].sort(), ['200', '201'], 'through the gateway: 200 and 201');
    },
  );
});

t.test('texts of the document stay data in every SDK', async (t) => {
  const doc = {
    openapi: '3.0.3',
    info: { title: 'Evil */ "title"', version: '1.0' },
    paths: {
      "/x/{a'b}": {
        get: {
          operationId: 'x"); process.exit(1); //',
          summary: '*/ evil \\u000a',
          parameters: [{ name: "a'b", in: 'path', required: true, example: '${__P(x)}' }],
        },
      },
      '/class': { post: { operationId: 'class', requestBody: { content: { 'application/json': { example: { v: '${__P(y)}' } } } } } },
    },
    components: { schemas: { 'bad name': { type: 'object', properties: { 'a-b': { type: 'string' }, class: { type: 'integer' } } } } },
  };
  const input = {
    doc,
    api: {
      name: 'Evil Api',
      version: '1.0',
      resources: [
        { path: '/x/*', methods: ['GET'] },
        { path: '/class', methods: ['POST'] },
      ],
    },
    baseUrl: 'http://gw.example:8280/evil/1.0',
  };
  const settings = { groupId: 'g', artifactId: 'a', modelPackage: 'm.model', apiPackage: 'm.api', languages: [] };
  const js = generateSdk('javascript', input, settings);
  if ('error' in js) throw new Error(js.error);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-sdk-evil-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, 'index.mjs'), js.get('index.js') ?? '');
  await run(process.execPath, ['--check', path.join(dir, 'index.mjs')]);
  t.pass('the JavaScript client parses');
  t.match(js.get('index.js'), /xProcessExit1\(params = \{\}, body = undefined\)/, 'the operation name is an identifier');
  const jmx = generateSdk('jmeter', input, settings);
  if ('error' in jmx) throw new Error(jmx.error);
  t.notOk((jmx.get('plan.jmx') ?? '').includes('${__P(x)}'), 'no JMeter function from the document');
  t.notOk((jmx.get('plan.jmx') ?? '').includes('"title"'), 'quotes escaped in XML');
  const java = generateSdk('java', input, settings);
  if ('error' in java) throw new Error(java.error);
  if (!fs.existsSync(JAVAC)) return t.comment(`skipped the compile: no javac at ${JAVAC}`);
  for (const [f, text] of java) {
    fs.mkdirSync(path.dirname(path.join(dir, 'j', f)), { recursive: true });
    fs.writeFileSync(path.join(dir, 'j', f), text);
  }
  await run(
    JAVAC,
    ['-d', path.join(dir, 'out'), ...[...java.keys()].filter((f) => f.endsWith('.java')).map((f) => path.join(dir, 'j', f))],
    { timeout: 120_000 },
  );
  t.pass('the Java sources compile');
  t.match(generateSdk('java', input, { ...settings, apiPackage: 'not a package' }), {
    error: /api_package "not a package" is not a Java package name/,
  });
});
