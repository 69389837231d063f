/**
 * The publisher's form over HTTP, field group by field group: the file a save writes (endpoint advanced
 * configuration, CORS, resource policies), the validator's errors beside their fields (aria-describedby),
 * a policy the policies file lacks, a commented file edited with its comments kept, and a YAML OpenAPI
 * document imported.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import * as toml from 'toml';
import { hidden, req, signIn, startPortalNode } from './helpers';

const describedBy = (html: string, id: string): string =>
  new RegExp(`id="${id}" name="${id}"[^>]*aria-describedby="([^"]*)"`).exec(html)?.[1] ?? '';
const errorText = (html: string, id: string): string => new RegExp(`id="${id}-error" role="alert">([^<]*)<`).exec(html)?.[1] ?? '';

t.test('the form writes every field group, shows errors beside fields and keeps comments', async (t) => {
  const node = await startPortalNode();
  t.teardown(() => node.close());
  const base = node.base;
  const cookie = await signIn(base);
  const csrf = hidden((await req(`${base}/publisher`, cookie)).text, 'csrf');
  const backend = /production = "([^"]+)"/.exec(fs.readFileSync(path.join(node.dir, 'apis', 'demo.toml'), 'utf8'))?.[1] ?? '';
  const form = {
    csrf,
    action: 'save',
    name: 'Parcels',
    context: '/parcels',
    version: '1',
    production: backend,
    auth: 'none',
    resources: 'GET /track\nPOST /send policy=10KPerMin',
    labels: 'Default',
  };

  const page = await req(`${base}/publisher/new`, cookie);
  t.match(
    page.text,
    /<details><summary>Production endpoint: advanced configuration<\/summary>/,
    'a closed group for the production endpoint',
  );
  t.match(page.text, /<label for="sandbox_suspend_codes">Sandbox suspend on transport codes<\/label>/);
  t.match(page.text, /<legend>CORS override/);
  t.match(page.text, /<select id="cors_credentials" name="cors_credentials">/);

  // Errors of each group beside their fields; nothing written.
  const bad = await req(`${base}/publisher/new`, cookie, {
    ...form,
    production_timeout: 'soon',
    production_suspend_codes: '900901',
    cors_credentials: 'maybe',
  });
  t.equal(bad.status, 400);
  t.match(
    errorText(bad.text, 'production_timeout'),
    /^Production endpoint response timeout: /,
    'the field in words, not its path in the file',
  );
  t.equal(describedBy(bad.text, 'production_timeout'), 'production_timeout-error production_timeout-hint', 'tied to its input');
  t.match(errorText(bad.text, 'production_suspend_codes'), /900901 is not a backend-side transport code/);
  t.match(errorText(bad.text, 'cors_credentials'), /^CORS allow credentials: /);
  t.notMatch(bad.text, /field-error[^>]*>[^<]*(endpoints|cors)\.[a-z_]+/, 'no message shows an internal field path');
  t.match(bad.text, /<select id="cors_credentials" name="cors_credentials" aria-invalid="true" aria-describedby="cors_credentials-error">/);
  const badPolicy = await req(`${base}/publisher/new`, cookie, { ...form, resources: 'GET /track\nPOST /send policy=NoSuchPolicy' });
  t.match(
    errorText(badPolicy.text, 'resources'),
    /^line 2, throttling policy: .*NoSuchPolicy.*is not an \[\[api\]\] policy/,
    'a policy the policies file lacks, by its line',
  );
  t.match(bad.text, /<details open><summary>Production endpoint/, 'a group with an error is open');
  t.notOk(fs.existsSync(path.join(node.dir, 'apis', 'created')), 'writes nothing');

  // A valid save: the file holds every group.
  const saved = await req(`${base}/publisher/new`, cookie, {
    ...form,
    production_timeout: '5s',
    production_retry_codes: '101503',
    production_retry_count: '2',
    sandbox: backend,
    sandbox_max_tps: '50',
    cors_enable: 'true',
    cors_origins: 'https://shop.example',
    cors_methods: 'GET, POST',
    cors_headers: 'Authorization',
    cors_credentials: 'true',
    unauthenticated_policy: 'Unlimited',
  });
  t.equal(saved.status, 303);
  const draft = path.join(node.dir, 'apis', 'created', 'parcels-1.toml');
  const doc = toml.parse(fs.readFileSync(draft, 'utf8')) as Record<string, unknown>;
  t.match(doc, {
    unauthenticated_policy: 'Unlimited',
    endpoints: {
      production: { url: backend, timeout: '5s', retry_codes: [101503], retry_count: 2 },
      sandbox: { url: backend, max_tps: 50 },
    },
    cors: {
      enable: true,
      allow_origins: ['https://shop.example'],
      allow_methods: ['GET', 'POST'],
      allow_headers: ['Authorization'],
      allow_credentials: true,
    },
    resources: [
      { path: '/track', methods: ['GET'] },
      { path: '/send', methods: ['POST'], policy: '10KPerMin' },
    ],
  });
  const edit = await req(`${base}/publisher/apis/created%3Aparcels-1.toml`, cookie);
  t.match(edit.text, /id="production_timeout" name="production_timeout" value="5s"/, 'prefilled when editing');
  t.match(edit.text, /<details open><summary>Production endpoint/, 'a group with values is open');
  t.match(edit.text, /<option value="true" selected>Yes<\/option>/);
  t.match(edit.text, />GET \/track\nPOST \/send policy=10KPerMin<\/textarea>/);

  // A hand-written file with comments, edited through the form.
  const commented = `# Hand-written: keep these notes.\nname = "Notes"\ncontext = "/notes"\nversion = "1"\nauth = "none"\nstate = "PUBLISHED"\n\n# The backend.\n[endpoints]\nproduction = "${backend}" # the demo\n\n# Read notes.\n[[resources]]\npath = "/menu"\nmethods = ["GET"]\n`;
  fs.writeFileSync(path.join(node.dir, 'apis', 'notes.toml'), commented);
  const current = await req(`${base}/publisher/apis/notes.toml`, cookie);
  const field = (id: string): string => new RegExp(`id="${id}" name="${id}" value="([^"]*)"`).exec(current.text)?.[1] ?? '';
  const edited = await req(`${base}/publisher/apis/notes.toml`, cookie, {
    csrf,
    action: 'save',
    name: field('name'),
    context: field('context'),
    version: field('version'),
    production: backend,
    production_timeout: '3s',
    auth: 'none',
    resources: 'GET /menu policy=20KPerMin',
    labels: 'Default',
  });
  t.equal(edited.status, 303);
  const text = fs.readFileSync(path.join(node.dir, 'apis', 'notes.toml'), 'utf8');
  t.same(
    text.split('\n').filter((l) => l.includes('#')),
    ['# Hand-written: keep these notes.', '# The backend.', '# Read notes.'],
    'the comment lines stay (the one on the URL line went with the URL into its section)',
  );
  t.match(toml.parse(text), {
    state: 'PUBLISHED',
    endpoints: { production: { url: backend, timeout: '3s' } },
    resources: [{ path: '/menu', policy: '20KPerMin' }],
  });
  const after = await req(`${base}/publisher/apis/notes.toml`, cookie);
  t.match(after.text, /Its comments and the keys the form does not show are kept\./, 'the notice says so');

  // YAML OpenAPI import.
  const yaml = 'openapi: 3.0.3\ninfo:\n  title: Parcels\n  version: "1"\npaths:\n  /track:\n    get: {}\n  /send:\n    post: {}\n';
  const imported = await req(`${base}/publisher/new`, cookie, { ...form, action: 'import', resources: '', openapi: yaml });
  t.equal(imported.status, 200);
  t.match(imported.text, /Imported 2 resource lines/);
  t.match(imported.text, />GET \/track\nPOST \/send<\/textarea>/);
  const notYaml = await req(`${base}/publisher/new`, cookie, { ...form, action: 'import', openapi: 'paths: [\n' });
  t.equal(notYaml.status, 400);
  t.match(errorText(notYaml.text, 'openapi'), /^not YAML/);
});
