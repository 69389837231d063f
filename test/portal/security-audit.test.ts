/**
 * The publisher's security audit over HTTP (docs/security-audit.md): with `[security_audit]` written, an
 * API's page shows the score and the findings of the OWASP ruleset and `GET /publisher/apis/{id}/audit`
 * answers the same report as JSON; an API file without an OpenAPI document is audited from its resources;
 * a file that does not validate is AUDIT_DOCUMENT; Spectral not installed is PACKAGE_MISSING naming it,
 * on the page and in the JSON, and the node keeps serving; the audit service's api_token is never logged.
 * Without the section, or with `global = false`, there is no section and the route is AUDIT_OFF.
 */
import Module from 'node:module';
import t from 'tap';
import { PORTAL_TOML, req, signIn, startPortalNode } from './helpers';
import { HARDENED, WEAK } from '../audit/documents';

const TOKEN = 'audit-token-7f3a9c-never-logged';
const AUDIT_TOML = `${PORTAL_TOML}[security_audit]\napi_token = "${TOKEN}"\ncollection_id = "collection-1"\nglobal = true\n`;

const WEAK_API = `name = "Weak"\ncontext = "/weak"\nversion = "1"\nstate = "PUBLISHED"\nauth = "none"\ndefinition = "weak.openapi.json"\n[endpoints]\nproduction = "http://127.0.0.1:1/"\n[[resources]]\npath = "/users/{id}"\nmethods = ["GET"]\n`;

interface Report {
  api: string;
  document: string;
  score: number;
  counts: Record<string, number>;
  findings: { rule: string; severity: string; message: string; path: string }[];
  error?: { code: string; message: string; package?: string };
}

const json = async (url: string, cookie: string): Promise<{ status: number; type: string; body: Report }> => {
  const r = await fetch(url, { headers: { Cookie: cookie }, redirect: 'manual' });
  return { status: r.status, type: r.headers.get('content-type') ?? '', body: (await r.json()) as Report };
};

/** Makes `name` unresolvable in this process (as an install with --omit=optional) until the returned function runs. */
function hide(name: string): () => void {
  const M = Module as unknown as { _resolveFilename: (req: string, ...rest: unknown[]) => string };
  const original = M._resolveFilename;
  M._resolveFilename = function (this: unknown, request: string, ...rest: unknown[]): string {
    if (request === name) throw Object.assign(new Error(`Cannot find module '${request}'`), { code: 'MODULE_NOT_FOUND' });
    return original.call(this, request, ...rest);
  };
  return () => {
    M._resolveFilename = original;
  };
}

t.test('[security_audit] written: the score and findings beside the API, and as JSON', async (t) => {
  const node = await startPortalNode(AUDIT_TOML, {
    'apis/weak.toml': WEAK_API,
    'apis/weak.openapi.json': JSON.stringify(WEAK),
    'apis/hardened.toml': WEAK_API.replace(/Weak|weak/g, (w) => (w === 'Weak' ? 'Hardened' : 'hardened')),
    'apis/hardened.openapi.json': JSON.stringify(HARDENED),
    'apis/broken.toml': 'name = "Broken"\nversion = "1"\n',
  });
  t.teardown(() => node.close());
  const base = node.base;
  const cookie = await signIn(base);

  // First, before Spectral was ever required by this process: the package missing.
  const restore = hide('@stoplight/spectral-core');
  const missing = await json(`${base}/publisher/apis/weak.toml/audit`, cookie);
  t.equal(missing.status, 503, 'PACKAGE_MISSING: 503');
  t.equal(missing.body.error?.code, 'PACKAGE_MISSING');
  t.equal(missing.body.error?.package, '@stoplight/spectral-core');
  t.match(missing.body.error?.message, /npm install @stoplight\/spectral-core/);
  const missingPage = await req(`${base}/publisher/apis/weak.toml`, cookie);
  t.equal(missingPage.status, 200, 'the page is served');
  t.match(
    missingPage.text,
    /<h2 id="security-audit">Security audit<\/h2><p class="error" role="alert">PACKAGE_MISSING: .*npm install @stoplight\/spectral-core/,
  );
  restore();

  const page = await req(`${base}/publisher/apis/weak.toml`, cookie);
  t.equal(page.status, 200);
  const shown = /<strong id="audit-score">(\d+)<\/strong> \/ 100/.exec(page.text);
  t.ok(shown, 'the score on the page');
  t.match(
    page.text,
    /<code>owasp:api4:2023-string-limit<\/code><\/td><td><code>\/paths\/~1users~1\{id\}\/get\/parameters\/0\/schema<\/code>/,
  );
  t.match(page.text, /<code>owasp:api2:2023-read-restricted<\/code>/);
  t.match(page.text, /<code>owasp:api4:2023-rate-limit-responses-429<\/code>/);
  t.match(page.text, /href="\/publisher\/apis\/weak\.toml\/audit"/);

  const weak = await json(`${base}/publisher/apis/weak.toml/audit`, cookie);
  t.equal(weak.status, 200);
  t.match(weak.type, /^application\/json/);
  t.equal(weak.body.api, 'weak.toml');
  t.equal(String(weak.body.score), shown?.[1], 'the page and the JSON give one score');
  const hardened = await json(`${base}/publisher/apis/hardened.toml/audit`, cookie);
  t.equal(hardened.status, 200);
  t.ok(hardened.body.score > weak.body.score + 20, `hardened ${hardened.body.score}, weak ${weak.body.score}`);
  t.match(weak.body.document, /OpenAPI document, with the gateway URLs as servers/);
  const rules = new Set(weak.body.findings.map((f) => f.rule));
  for (const rule of ['owasp:api2:2023-read-restricted', 'owasp:api4:2023-string-limit', 'owasp:api4:2023-rate-limit-responses-429'])
    t.ok(rules.has(rule), rule);
  t.ok(
    weak.body.findings.some((f) => f.rule === 'owasp:api8:2023-no-server-http' && f.path === '/servers/0/url'),
    "the gateway's http:// URL the callers are given is audited, not the backend's",
  );
  const rows = page.text.match(/<tr><td>(error|warning|info|hint)<\/td>/g) ?? [];
  t.equal(rows.length, weak.body.findings.length, 'every finding on the page');

  // An API file naming no OpenAPI document: the document made from its resources, behind OAuth 2.0.
  const secured = await json(`${base}/publisher/apis/pizzashack-secured.toml/audit`, cookie);
  t.equal(secured.status, 200);
  t.match(secured.body.document, /made from the API file/);
  const securedRules = new Set(secured.body.findings.map((f) => f.rule));
  t.notOk(securedRules.has('owasp:api2:2023-read-restricted'), 'its resources need a token: no unprotected read');
  t.notOk(securedRules.has('owasp:api4:2023-rate-limit-responses-429'), 'the gateway answers 429: documented');
  t.ok(secured.body.findings.length > 0 && secured.body.score < 100, `its own findings (${secured.body.score})`);

  const broken = await json(`${base}/publisher/apis/broken.toml/audit`, cookie);
  t.equal(broken.status, 422);
  t.equal(broken.body.error?.code, 'AUDIT_DOCUMENT');
  t.match(broken.body.error?.message, /does not validate/);

  const anonymous = await fetch(`${base}/publisher/apis/weak.toml/audit`, { redirect: 'manual' });
  t.not(anonymous.status, 200, 'not for visitors');
  t.notMatch(await anonymous.text(), /owasp:/);

  t.ok(
    node.lines.some((l) => l.msg === 'publisher_audit' || l.event === 'publisher_audit' || JSON.stringify(l).includes('publisher_audit')),
    'audits are logged',
  );
  t.notOk(
    node.raw.some((l) => l.includes(TOKEN)),
    'the api_token is in no log line',
  );
  t.notOk(
    node.out.some((l) => l.includes(TOKEN)),
    'nor in what the node prints',
  );
});

for (const [name, toml] of [
  ['not written', PORTAL_TOML],
  ['global = false', `${PORTAL_TOML}[security_audit]\nglobal = false\n`],
] as const) {
  t.test(`[security_audit] ${name}: no audit section, the route answers AUDIT_OFF`, async (t) => {
    const node = await startPortalNode(toml);
    t.teardown(() => node.close());
    const cookie = await signIn(node.base);
    const page = await req(`${node.base}/publisher/apis/demo.toml`, cookie);
    t.equal(page.status, 200);
    t.match(page.text, /<h2>Lifecycle<\/h2>/, 'the page is the API page');
    t.notMatch(page.text, /Security audit/);
    const off = await json(`${node.base}/publisher/apis/demo.toml/audit`, cookie);
    t.equal(off.status, 404);
    t.equal(off.body.error?.code, 'AUDIT_OFF');
    t.match(off.body.error?.message, /write \[security_audit\]/);
  });
}
