/**
 * Every fenced code block of the docs pages (every code sample in the docs runs in a test) is
 * checked by what it is. README.md, docs/quickstart.md (test/gateway/npm-start.test.ts) and docs/embedding.md
 * (test/unit/embedding-docs.test.ts) run elsewhere; docs/performance.md is written by the bench.
 *
 * - ```toml: a deployment.toml block is loaded with loadConfig (text option) with no error and no warning;
 *   an API file block ([[resources]], context, [endpoints...]) by parseApiText with the policies of
 *   conf/policies.toml; a policies block ([[subscription]], [[application]], [[api]], [[custom]]) by
 *   parsePolicies; a fault templates block ([[template]]) by parseFaultTemplates; all with zero errors.
 * - ```json: JSON.parse; every key of it must occur in the compiled lib/ (no invented fields); a fault body's
 *   code is in GATEWAY_FAULTS with that message; an event's name is in EVENT_NAMES; a log line's `event`
 *   is a string the compiled lib/ emits; a transport fault line agrees with makeFault; an analytics event,
 *   a health report and an event envelope are type-checked as literals of their package type (JSON_TYPES).
 * - ```sh: every `throughway` / `npm run -s throughway --` command names a command of the CLI's usage and
 *   only its flags; every curl URL is a route (key manager routes below; API paths of conf/apis).
 * - ```ts: type-checked with the TypeScript compiler against the built declarations ('throughway' mapped to
 *   dist/lib/index.d.ts); fragments (no import) see the names of FRAGMENT_PRELUDE. ```js: the mediation
 *   scripts run in the worker's script runner (lib/mediation/worker.ts) and their answers are checked.
 * - Blocks without a language: checked where they list something checkable (the CLI synopsis, the source
 *   layout: every file named exists), otherwise skipped by SKIPPED with the reason; ```mermaid likewise.
 *
 * Markers: an HTML comment on the line right before a block changes how it is checked:
 *   `<!-- sample: api-part -->`  a part of an API file: completed with name/context/version (and a
 *                                production endpoint and one resource when it has none), then validated;
 *   `<!-- sample: fragment -->`  only parsed (TOML/JSON syntax), not validated — keep rare;
 *   `<!-- sample: error CODE -->` validated, and must report the diagnostic CODE.
 */
import t, { type Test } from 'tap';
import { readFileSync, readdirSync, existsSync, mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { tmpdir } from 'node:os';
import { valueSymbol } from 'piscina';
import runMediation from '../../lib/mediation/worker';
import type { MediateResult, MediateTask, ScriptCall } from '../../lib/mediation/steps';
import * as TOML from 'toml';
import ts from 'typescript';
import { loadConfig } from '../../lib/config/load';
import { parseApiText, versionedPath, defaultPath } from '../../lib/gateway/apis';
import { parsePolicies, loadPolicies, policyNames } from '../../lib/throttle/policies';
import { parseFaultTemplates } from '../../lib/faults/templates';
import { GATEWAY_FAULTS } from '../../lib/faults';
import { EVENT_NAMES } from '../../lib/events/bus';
import { makeFault, type FaultReason, type ProtocolState } from '../../lib/transport/codes';
import { USAGE } from '../../lib/cli';
import { ADMIN_USAGE, ADMIN_COMMANDS } from '../../lib/keymanager/cli';
import { IMPORT_USAGE } from '../../lib/import/cli';

const root = join(__dirname, '..', '..', '..');
const dist = join(root, 'dist');

/** The pages this test covers (the others run elsewhere, see above). */
const PAGES = [
  'admin-api',
  'analytics',
  'apis',
  'architecture',
  'events',
  'faults',
  'key-manager',
  'mediation',
  'migrating',
  'operations',
  'scale-out',
  'security',
  'throttling',
  'tls',
  'tracing',
  'transport',
  'websocket',
  'configuration',
  'user-stores',
  'security-audit',
];

/** Blocks deliberately not checked, by page and first line, with the reason. */
const SKIPPED: ReadonlyArray<{ page: string; starts: string; reason: string }> = [
  { page: 'architecture', starts: 'client ──►', reason: 'a drawing of the call path, not code' },
  {
    page: 'key-manager',
    starts: "curl -u admin:<password> -H 'Content-Type: application/json'",
    reason: 'keys for the code flow; test/keymanager/authorization-code.test.ts makes them and runs the flow',
  },
  {
    page: 'key-manager',
    starts: 'curl -u <key>:<secret> -d grant_type=authorization_code',
    reason: 'needs a code from a sign-in; test/keymanager/authorization-code.test.ts redeems one',
  },
  {
    page: 'architecture',
    starts: '7  boot and face',
    reason: 'a drawing of the floors (test/unit/floors.test.ts checks the imports it shows)',
  },
  {
    page: 'architecture',
    starts: 'caller              port (exchange.ts)',
    reason:
      "a chart of the transport's ports (exchange.ts declares them; test/transport/invariants.test.ts and the behaviour tests use them)",
  },
  {
    page: 'architecture',
    starts: 'stateDiagram-v2',
    reason: 'a mermaid state diagram (its transitions are checked against states.ts by test/unit/transport-docs.test.ts for transport.md)',
  },
  {
    page: 'migrating',
    starts: '$ throughway import api',
    reason: 'the report an import prints; test/import/projects.test.ts asserts its lines',
  },
  {
    page: 'transport',
    starts: 'stateDiagram-v2',
    reason: 'generated from lib/transport/states.ts (test/unit/transport-docs.test.ts checks it is current)',
  },
];

interface Block {
  readonly page: string;
  readonly line: number;
  readonly lang: string;
  readonly text: string;
  readonly marker: string | undefined;
}

function blocks(page: string): Block[] {
  const lines = readFileSync(join(root, 'docs', `${page}.md`), 'utf8').split('\n');
  const out: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^```(\S*)\s*$/.exec(lines[i] ?? '');
    if (m === null) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i] ?? ''); i++) body.push(lines[i] ?? '');
    const prev = /^<!--\s*sample:\s*(.+?)\s*-->\s*$/.exec(lines[start - 1] ?? '');
    out.push({ page, line: start + 1, lang: m[1] ?? '', text: body.join('\n') + '\n', marker: prev?.[1] });
  }
  return out;
}

const all = PAGES.flatMap(blocks);
const where = (b: Block): string => `docs/${b.page}.md:${b.line} (${b.lang === '' ? 'plain' : b.lang})`;

// The compiled library, for "does the code know this name" checks.
function readJs(dir: string): string {
  let s = '';
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) s += readJs(join(dir, e.name));
    else if (e.name.endsWith('.js')) s += readFileSync(join(dir, e.name), 'utf8');
  }
  return s;
}
const libJs = readJs(join(dist, 'lib'));
const knownWord = (w: string): boolean =>
  new RegExp(`(^|[^A-Za-z0-9_$])${w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}([^A-Za-z0-9_$]|$)`).test(libJs);

t.test('the pages have the blocks this test expects (a new block is checked, not lost)', async (t) => {
  t.ok(all.length >= 40, `${all.length} blocks found`);
  const kinds = new Set(all.map((b) => b.lang));
  for (const k of kinds) t.ok(['toml', 'json', 'sh', 'bash', 'ts', 'js', '', 'mermaid', 'text'].includes(k), `known language: ${k}`);
});

// ---------------------------------------------------------------- toml
const policiesFile = loadPolicies(join(root, 'conf', 'policies.toml'));
const names = policiesFile.policies === undefined ? undefined : policyNames(policiesFile.policies);

function tomlKind(b: Block): 'deployment' | 'api' | 'policies' | 'templates' {
  if (b.marker === 'api-part') return 'api';
  if (/^\[\[template\]\]/m.test(b.text)) return 'templates';
  if (/^\[\[(subscription|application|api|custom)\]\]/m.test(b.text)) return 'policies';
  if (/^context\s*=/m.test(b.text) || /^\[\[resources\]\]/m.test(b.text) || /^\[endpoints[\].]/m.test(b.text)) return 'api';
  return 'deployment';
}

function completeApi(text: string): string {
  let s = `name = "Sample"\ncontext = "/sample"\nversion = "1.0.0"\n${text}`;
  if (!/^\[endpoints/m.test(s)) s += '\n[endpoints]\nproduction = "http://127.0.0.1:9000"\n';
  if (!/^\[\[resources\]\]/m.test(s)) s += '\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n';
  return s;
}

interface Diag {
  readonly level: string;
  readonly code: string;
  readonly message: string;
}

for (const b of all.filter((x) => x.lang === 'toml')) {
  t.test(`${where(b)}: ${tomlKind(b)}`, async (t) => {
    t.doesNotThrow(() => TOML.parse(b.marker === 'api-part' ? completeApi(b.text) : b.text), 'valid TOML');
    if (b.marker === 'fragment') return;
    // A real directory: an API file's script is looked up relative to it; the page's own script block
    // (first line `// <path>`) is written there.
    const dir = mkdtempSync(join(tmpdir(), 'docs-samples-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, `${b.page}-${b.line}.toml`);
    const script = /^script\s*=\s*"([^"]+)"/m.exec(b.text)?.[1];
    if (script !== undefined) {
      const js = all.find((x) => x.page === b.page && x.lang === 'js' && x.text.startsWith(`// ${script}\n`));
      t.ok(js !== undefined, `the page shows ${script}`);
      mkdirSync(dirname(join(dir, script)), { recursive: true });
      writeFileSync(join(dir, script), js?.text ?? '');
    }
    let diags: readonly Diag[];
    let ok: boolean;
    switch (tomlKind(b)) {
      case 'deployment': {
        const r = loadConfig({ text: b.text, file, env: { KEYSTORE_PASSWORD: 'sample', LDAP_PASSWORD: 'sample' } });
        diags = r.diagnostics;
        ok = r.ok;
        break;
      }
      case 'api': {
        const r = parseApiText(b.marker === 'api-part' ? completeApi(b.text) : b.text, file, {}, names);
        diags = r.diagnostics;
        ok = r.api !== undefined;
        break;
      }
      case 'policies': {
        const r = parsePolicies(b.text, file);
        diags = r.diagnostics;
        ok = r.policies !== undefined;
        break;
      }
      case 'templates': {
        const r = parseFaultTemplates(b.text, file);
        diags = r.diagnostics;
        ok = r.templates !== undefined;
        break;
      }
    }
    const expected = /^error (\S+)$/.exec(b.marker ?? '')?.[1];
    if (expected !== undefined) {
      t.ok(
        diags.some((d) => d.code === expected),
        `reports ${expected}`,
      );
      return;
    }
    t.equal(ok, true, 'accepted');
    t.same(
      diags.filter((d) => d.level === 'error' || d.level === 'warning').map((d) => `${d.code}: ${d.message}`),
      [],
      'no error, no warning',
    );
  });
}

// ---------------------------------------------------------------- json
function keysOf(v: unknown, out: Set<string>): Set<string> {
  if (Array.isArray(v)) for (const x of v) keysOf(x, out);
  else if (v !== null && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      out.add(k);
      keysOf(x, out);
    }
  }
  return out;
}

for (const b of all.filter((x) => x.lang === 'json')) {
  t.test(`${where(b)}`, async (t) => {
    let doc: unknown;
    t.doesNotThrow(() => (doc = JSON.parse(b.text)), 'valid JSON');
    if (doc === undefined || b.marker === 'fragment') return;
    for (const k of keysOf(doc, new Set())) t.ok(knownWord(k), `field ${k} occurs in lib/`);
    const o = doc as Record<string, unknown>;
    const fault = o['fault'] as Record<string, unknown> | undefined;
    if (fault !== undefined) {
      const def = GATEWAY_FAULTS.find((f) => f.code === fault['code']);
      t.ok(def !== undefined, `fault ${String(fault['code'])} is in GATEWAY_FAULTS`);
      t.equal(fault['type'], 'Status report');
      t.equal(fault['message'], def?.message, "the table's message");
      t.type(fault['description'], 'string');
      // A fixed description is the table's; the table says when the gateway writes a specific one instead.
      if (def !== undefined && !def.description.includes('the description names'))
        t.equal(fault['description'], def.description, "the table's description");
    }
    if (typeof o['name'] === 'string' && 'payload' in o)
      t.ok((EVENT_NAMES as readonly string[]).includes(o['name']), `event ${o['name']} is in EVENT_NAMES`);
    if (typeof o['event'] === 'string')
      t.ok(libJs.includes(`'${o['event']}'`) || libJs.includes(`"${o['event']}"`), `log event ${o['event']} is emitted in lib/`);
    if (o['event'] === 'transport_fault') {
      // The fields of a transport fault follow from its reason and state (lib/transport/codes.ts makeFault).
      const f = makeFault(o['reason'] as FaultReason, o['state'] as ProtocolState);
      t.same(
        { code: o['code'], base: o['base'], stateName: o['stateName'], side: o['side'], status: o['status'] },
        { code: f.code, base: f.base, stateName: f.stateName, side: f.side, status: f.httpStatus },
        'the transport fault of that reason and state',
      );
    }
    if (Array.isArray(o['checks'])) {
      for (const c of o['checks'] as Array<Record<string, unknown>>)
        t.ok(libJs.includes(`'${String(c['name'])}'`), `health checker ${String(c['name'])} exists`);
    }
  });
}

// ---------------------------------------------------------------- sh
/** Key manager routes (lib/keymanager/http.ts, admin.ts): method and path pattern. */
const MANAGEMENT_ROUTES: ReadonlyArray<readonly [string, RegExp]> = [
  ['POST', /^\/oauth2\/(token|revoke|introspect)$/],
  ['GET', /^\/oauth2\/jwks$/],
  ['GET|POST', /^\/admin\/v1\/applications$/],
  ['GET|DELETE', /^\/admin\/v1\/applications\/[^/]+$/],
  ['POST', /^\/admin\/v1\/applications\/[^/]+\/keys$/],
  ['GET|POST|PATCH|DELETE', /^\/admin\/v1\/subscriptions$/],
  ['GET|POST', /^\/admin\/v1\/users$/],
  ['GET', /^\/(health|health\/live|metrics)$/],
  ['GET', /^(\/oauth2\/token)?\/\.well-known\/openid-configuration$|^\/\.well-known\/oauth-authorization-server(\/oauth2\/token)?$/],
  ['POST', /^\/client-registration\/v0\.\d+\/register$/],
  ['POST', /^\/admin\/v1\/registration-tokens$/],
];

/** The gateway's own routes before routing (lib/gateway/token-route.ts): POST only. */
const GATEWAY_ROUTES = /^\/(token|revoke)\/?$/;

/** The gateway's API paths of conf/apis: versioned and default-version, each resource as a pattern. */
const API_ROUTES: RegExp[] = [];
for (const f of readdirSync(join(root, 'conf', 'apis')).filter((x) => x.endsWith('.toml'))) {
  const r = parseApiText(readFileSync(join(root, 'conf', 'apis', f), 'utf8'), join(root, 'conf', 'apis', f), { demo_port: '9000' }, names);
  const api = r.api;
  if (api === undefined) continue;
  const bases = [versionedPath(api), ...(api.defaultVersion ? [defaultPath(api)] : [])];
  for (const res of api.resources) {
    const p = res.path
      .replace(/[.+?^$()|[\]\\]/g, '\\$&')
      .replace(/\\?\{[^}]+\\?\}/g, '[^/]+')
      .replace(/\/\*$/, '(/.*)?');
    for (const base of bases) API_ROUTES.push(new RegExp(`^${base.replace(/\/$/, '')}${p}$`));
  }
}

t.test('the route tables are not empty and refuse what does not exist', async (t) => {
  t.ok(API_ROUTES.length >= 8, `${API_ROUTES.length} API paths`);
  t.ok(API_ROUTES.some((p) => p.test('/pizzashack/1.0.0/menu')) && !API_ROUTES.some((p) => p.test('/pizzashack/1.0.0/nothing')));
  t.notOk(MANAGEMENT_ROUTES.some(([, p]) => p.test('/admin/v1/nothing')));
});

function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3] ?? '');
}

const usageCommands = [...USAGE.matchAll(/^ {2}([a-z][a-z |]*?)\s{2,}/gm)].map((m) => (m[1] ?? '').trim());
const usageFlags = new Set([...`${USAGE}\n${ADMIN_USAGE}\n${IMPORT_USAGE}`.matchAll(/--[a-z][a-z-]*/g)].map((m) => m[0]));
const adminLines = ADMIN_USAGE.split('\n').map((l) => l.trim());
const importLines = IMPORT_USAGE.split('\n').map((l) => l.trim());

function checkCli(t: Test, argv: string[], line: string): void {
  const cmd: string[] = [];
  for (const a of argv) {
    if (a.startsWith('-')) break;
    cmd.push(a);
  }
  const first = cmd[0] ?? '';
  if (first === 'import' || first === 'export')
    t.ok(
      importLines.some((l) => l.startsWith(`${first} ${cmd[1] ?? ''} `)),
      `${first} ${cmd[1] ?? ''} is an import command: ${line}`,
    );
  else if (ADMIN_COMMANDS.has(first))
    t.ok(
      adminLines.some((l) => l.startsWith(`${first} ${cmd[1] ?? ''}`)),
      `${first} ${cmd[1] ?? ''} is an admin command: ${line}`,
    );
  else t.ok(usageCommands.includes(cmd.join(' ')), `"${cmd.join(' ')}" is a command of the usage: ${line}`);
  for (const a of argv) if (a.startsWith('--')) t.ok(usageFlags.has(a.split('=')[0] ?? a), `flag ${a} exists: ${line}`);
}

function checkCurl(t: Test, argv: string[], line: string): void {
  const url = argv.find((a) => /^https?:\/\//.test(a));
  t.ok(url !== undefined, `curl names a URL: ${line}`);
  if (url === undefined) return;
  const u = new URL(url);
  t.equal(u.hostname, 'localhost', 'a local node');
  const x = argv.indexOf('-X');
  const method = x >= 0 ? (argv[x + 1] ?? '') : argv.some((a) => a === '-d' || a.startsWith('--data')) ? 'POST' : 'GET';
  if (u.port === '9763')
    t.ok(
      MANAGEMENT_ROUTES.some(([m, p]) => m.split('|').includes(method) && p.test(u.pathname)),
      `${method} ${u.pathname} is a management route`,
    );
  else if (u.port === '8280' || u.port === '8243')
    t.ok(
      API_ROUTES.some((p) => p.test(u.pathname)) || (method === 'POST' && GATEWAY_ROUTES.test(u.pathname)),
      `${u.pathname} is a path of an API in conf/apis, or the gateway's /token or /revoke`,
    );
  else t.fail(`unknown port ${u.port}: ${line}`);
}

for (const b of all.filter((x) => x.lang === 'sh' || x.lang === 'bash')) {
  t.test(`${where(b)}`, async (t) => {
    let n = 0;
    const vars = new Map<string, string>();
    for (const raw of b.text.replace(/\\\n/g, ' ').split('\n')) {
      const line = raw.replace(/\s+#.*$/, '').trim();
      if (line === '' || line.startsWith('#')) continue;
      const assign = /^([A-Z_]+)='([^']*)'$/.exec(line);
      if (assign !== null) {
        vars.set(assign[1] ?? '', assign[2] ?? '');
        continue;
      }
      const argv = words(line.replace(/\$([A-Z_]+)/g, (_, v: string) => vars.get(v) ?? ''));
      n++;
      if (argv[0] === 'throughway') checkCli(t, argv.slice(1), line);
      else if (argv.slice(0, 4).join(' ') === 'npm run -s throughway' && argv[4] === '--') checkCli(t, argv.slice(5), line);
      else if (argv[0] === 'curl') checkCurl(t, argv.slice(1), line);
      else t.fail(`a command this test knows: ${line}`);
    }
    t.ok(n > 0, 'has commands');
  });
}

// ---------------------------------------------------------------- plain blocks
for (const b of all.filter((x) => x.lang === '' || x.lang === 'mermaid' || x.lang === 'text')) {
  const skip = SKIPPED.find((s) => s.page === b.page && b.text.trimStart().startsWith(s.starts));
  if (skip !== undefined) {
    t.test(`${where(b)}: skipped, ${skip.reason}`, async (t) => t.pass('skipped'));
    continue;
  }
  if (b.text.trimStart().startsWith('throughway ')) {
    t.test(`${where(b)}: the CLI synopsis is the admin usage`, async (t) => {
      for (const l of b.text.split('\n').filter((x) => x.trim() !== '')) t.ok(adminLines.includes(l.replace(/^throughway /, '').trim()), l);
    });
    continue;
  }
  if (b.text.trimStart().startsWith('lib/')) {
    t.test(`${where(b)}: every file of the layout exists`, async (t) => {
      const stack: Array<{ indent: number; dir: string }> = [];
      let n = 0;
      for (const l of b.text.split('\n')) {
        const m = /^(\s*)(\S+)/.exec(l);
        if (m === null) continue;
        const indent = (m[1] ?? '').length;
        if (indent > 0 && indent >= 20) continue; // a description's continuation line
        while (stack.length > 0 && (stack[stack.length - 1]?.indent ?? 0) >= indent) stack.pop();
        const base = stack.map((s) => s.dir).join('');
        const entry = m[2] ?? '';
        if (entry.endsWith('/')) {
          t.ok(existsSync(join(root, base, entry)), `${base}${entry} exists`);
          stack.push({ indent, dir: entry });
          n++;
          continue;
        }
        // `a.ts, b.ts` or `events/bus.ts`
        const list = /^(\s*)([\w./-]+\.ts(?:, [\w./-]+\.ts)*)/.exec(l)?.[2];
        for (const f of (list ?? '').split(', ').filter((x) => x !== '')) {
          t.ok(existsSync(join(root, base, f)), `${base}${f} exists`);
          n++;
        }
      }
      t.ok(n > 50, `${n} entries checked`);
    });
    continue;
  }
  t.test(`${where(b)}: a plain block must be listed in SKIPPED or checked`, async (t) => t.fail(b.text.slice(0, 60)));
}

// ---------------------------------------------------------------- js: mediation scripts
/** One mediation as the worker thread runs it (lib/mediation/worker.ts, called in this thread). */
async function mediateWith(
  file: string,
  hook: 'onRequest' | 'onResponse',
  message: ScriptCall['message'],
  body: Buffer,
  format: MediateTask['format'],
  contentType: string,
): Promise<MediateResult> {
  const task: MediateTask = {
    body: new Uint8Array(body),
    format,
    contentType,
    validate: undefined,
    convertTo: undefined,
    conversion: {} as MediateTask['conversion'],
    script: { file, hook, message, timeout: 2000, maxResult: 1 << 20 },
  };
  const wrapped = (await runMediation(task)) as Record<symbol, MediateResult>;
  return wrapped[valueSymbol] as MediateResult;
}

t.test('the mediation scripts of docs/mediation.md run in the real script runner and answer as the page says', async (t) => {
  const scripts = all.filter((b) => b.lang === 'js' && b.page === 'mediation');
  t.equal(scripts.length, 2);
  const dir = mkdtempSync(join(tmpdir(), 'docs-samples-js-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const orders = join(dir, 'orders.js');
  writeFileSync(orders, scripts[0]?.text ?? '');
  const api = { name: 'Orders', version: '1.0.0' };
  const json = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));
  let r = await mediateWith(
    orders,
    'onRequest',
    { method: 'POST', path: '/orders', headers: { 'x-key': 'no', 'content-type': 'application/json' }, api },
    json({}),
    'json',
    'application/json',
  );
  t.same(r.changes, { status: 403, body: { denied: '/orders' } }, 'no x-key: answered at once with 403');
  r = await mediateWith(
    orders,
    'onRequest',
    { method: 'POST', path: '/orders', headers: { 'x-key': 'open', 'content-type': 'application/json' }, api },
    json({ items: [{ price: 2 }, { price: 3 }] }),
    'json',
    'application/json',
  );
  t.equal(r.scriptFailure, undefined);
  t.same(r.changes?.headers, { 'X-Mediated': 'yes', 'X-Internal': null }, 'a header set, one removed');
  t.same(JSON.parse(Buffer.from(r.body).toString()), { items: [{ price: 2 }, { price: 3 }], total: 5 }, 'the body with its total');
  r = await mediateWith(
    orders,
    'onResponse',
    { method: 'GET', path: '/orders', status: 200, headers: {}, api },
    json({ a: 1 }),
    'json',
    'application/json',
  );
  t.same(r.changes?.status, 203);
  t.same(JSON.parse(Buffer.from(r.body).toString()), { wrapped: { a: 1 } });

  const form = join(dir, 'form.js');
  writeFileSync(form, scripts[1]?.text ?? '');
  const ct = 'multipart/form-data; boundary=XyZ';
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47]);
  const body = Buffer.concat([
    Buffer.from(
      '--XyZ\r\nContent-Disposition: form-data; name="title"\r\n\r\nHoliday\r\n--XyZ\r\nContent-Disposition: form-data; name="photo"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n',
    ),
    png,
    Buffer.from('\r\n--XyZ--\r\n'),
  ]);
  r = await mediateWith(
    form,
    'onRequest',
    { method: 'POST', path: '/upload', headers: { 'content-type': ct }, api },
    body,
    'multipart',
    ct,
  );
  t.equal(r.scriptFailure, undefined);
  t.equal(
    Buffer.from(r.body).toString(),
    '--XyZ\r\nContent-Disposition: form-data; name="title"\r\n\r\nHoliday\r\n--XyZ\r\nContent-Disposition: form-data; name="checked"\r\n\r\nyes\r\n--XyZ--\r\n',
    'photo dropped, a part added',
  );
  // The parts look as the script's comment says: text as a string, a file with filename, contentType, base64.
  const probe = join(dir, 'probe.js');
  writeFileSync(probe, "module.exports.onRequest = (m) => ({ headers: { 'x-seen': JSON.stringify(m.body) } });\n");
  r = await mediateWith(
    probe,
    'onRequest',
    { method: 'POST', path: '/upload', headers: { 'content-type': ct }, api },
    body,
    'multipart',
    ct,
  );
  t.equal(r.scriptFailure, undefined);
  t.same(JSON.parse(r.changes?.headers?.['x-seen'] ?? 'null'), [
    { name: 'title', body: 'Holiday' },
    { name: 'photo', filename: 'a.png', contentType: 'image/png', body: { base64: png.toString('base64') } },
  ]);
});

// ---------------------------------------------------------------- ts: type-checked against the declarations
/** What fragments (blocks without imports) may use: the objects the surrounding text names. */
const FRAGMENT_PRELUDE = `import type { LoadResult } from 'throughway';
import { startNode, type RunningNode } from 'throughway/node';
declare const loaded: LoadResult;
declare const node: RunningNode;
declare const revokedJtis: Map<string, number>;
declare function pingRedis(): Promise<number>;
declare const throttled: Map<string, number>;
declare const hits: number;
declare const lookups: number;
void startNode;
`;

/** JSON samples with a type in the package: the type's name and how to recognise such a sample. */
const JSON_TYPES: ReadonlyArray<readonly [string, (o: Record<string, unknown>) => boolean]> = [
  ['AnalyticsEvent', (o) => 'apiResourceTemplate' in o],
  ['HealthReport', (o) => 'checks' in o && 'failing' in o],
  ['AnyEvent', (o) => 'name' in o && 'payload' in o],
];

t.test('the TypeScript blocks (and the typed JSON samples) type-check against the package', async (t) => {
  const tsBlocks = all.filter((b) => b.lang === 'ts');
  t.ok(tsBlocks.length >= 4, `${tsBlocks.length} blocks`);
  const dir = mkdtempSync(join(tmpdir(), 'docs-samples-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const files: string[] = [];
  for (const b of tsBlocks) {
    const file = join(dir, `${b.page}-${b.line}.ts`);
    const isModule = /^import /m.test(b.text);
    // A fragment runs inside an async function: its own `const node` may shadow the prelude's.
    writeFileSync(file, isModule ? b.text : `${FRAGMENT_PRELUDE}\nexport async function sample(): Promise<void> {\n${b.text}}\n`);
    files.push(file);
  }
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ES2022,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2022.d.ts'],
    types: ['node'],
    typeRoots: [join(root, 'node_modules', '@types')],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    esModuleInterop: true,
    baseUrl: root,
    paths: { throughway: [join(dist, 'lib', 'index.d.ts')], 'throughway/node': [join(dist, 'lib', 'node', 'index.d.ts')] },
  };
  // JSON samples of a typed shape are type-checked as object literals of that type: a field the type lacks
  // (excess property) or a missing one is reported.
  for (const b of all.filter((x) => x.lang === 'json')) {
    let doc: Record<string, unknown>;
    try {
      doc = JSON.parse(b.text) as Record<string, unknown>;
    } catch {
      continue; // reported by the JSON test above
    }
    const type = JSON_TYPES.find(([, is]) => is(doc))?.[0];
    if (type === undefined) continue;
    const file = join(dir, `json-${b.page}-${b.line}.ts`);
    writeFileSync(file, `import type { ${type} } from 'throughway';\nexport const sample: ${type} = ${b.text.trim()};\n`);
    files.push(file);
    tsBlocks.push(b);
  }
  t.ok(files.length >= tsBlocks.filter((b) => b.lang === 'ts').length + 3, 'the typed JSON samples are among them');
  // Canaries: a wrong use of the package and of the prelude must be reported, or the check proves nothing.
  const canaries = [join(dir, 'canary-module.ts'), join(dir, 'canary-fragment.ts'), join(dir, 'canary-json.ts')];
  writeFileSync(
    canaries[2] as string,
    'import type { HealthReport } from \'throughway\';\nexport const sample: HealthReport = {"status":"UP","failing":[],"checks":[],"extra":1};\n',
  );
  writeFileSync(canaries[0] as string, "import { createGateway } from 'throughway';\nexport const n: number = createGateway;\n");
  writeFileSync(canaries[1] as string, `${FRAGMENT_PRELUDE}\nexport async function sample(): Promise<void> {\nnode.noSuchMember();\n}\n`);
  const program = ts.createProgram([...files, ...canaries], options);
  for (const c of canaries)
    t.ok(program.getSemanticDiagnostics(program.getSourceFile(c)).length > 0, `canary ${c.slice(dir.length + 1)} is rejected`);
  for (const [i, f] of files.entries()) {
    const sf = program.getSourceFile(f);
    const diags = [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)];
    t.same(
      diags.map(
        (d) =>
          `${d.start !== undefined && sf !== undefined ? sf.getLineAndCharacterOfPosition(d.start).line + 1 : 0}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`,
      ),
      [],
      where(tsBlocks[i] as Block),
    );
  }
});
