/**
 * Structural tests of the declarative configuration schema (lib/config/schema): the table is data, so
 * these tests check it is consistent with itself, with the spec's rows, and with the reference's own
 * deployment.toml files (which must load with zero errors).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import * as toml from 'toml';
import type { KeyDef, SectionDef } from '../../lib/config/schema-types';
import { SCHEMA_VERSION, SECTIONS } from '../../lib/config/schema';
import { DOC000_SECTIONS } from '../../lib/config/schema/doc000';
import { DOC001_SECTIONS } from '../../lib/config/schema/doc001';
import { THROUGHWAY_SECTIONS } from '../../lib/config/schema/throughway';
import { REFERENCE_SECTIONS } from '../../lib/config/schema/reference';

const REF = /^\$ref\{([^}]+)\}$/;

function section(p: string): SectionDef {
  const s = SECTIONS.find((x) => x.path === p);
  if (s === undefined) throw new Error(`no section [${p}]`);
  return s;
}

function key(p: string, k: string): KeyDef {
  const d = section(p).keys.find((x) => x.key === k);
  if (d === undefined) throw new Error(`no key ${k} in [${p}]`);
  return d;
}

/** The full dotted path of a key; a section path of '' is the top level. */
function full(s: SectionDef, k: KeyDef): string {
  return s.path === '' ? k.key : `${s.path}.${k.key}`;
}

/** Finds the KeyDef of a full dotted path (no placeholders in the path). */
function lookup(fullPath: string): { section: SectionDef; def: KeyDef } | undefined {
  for (const s of SECTIONS) for (const k of s.keys) if (full(s, k) === fullPath) return { section: s, def: k };
  return undefined;
}

const isBoolish = (d: KeyDef): boolean => d.type === 'b' || d.boolString === true;

/** The JavaScript shape a default must have, from format first, then boolString, then type. */
function defaultProblem(d: KeyDef): string | undefined {
  const v = d.default;
  if (v === undefined) return undefined;
  if (typeof v === 'string' && REF.test(v)) return d.type === 's' ? undefined : '$ref default on a non-string key';
  if (d.format === 'duration' || d.format === 'bytes') return typeof v === 'number' && Number.isFinite(v) ? undefined : 'not a number';
  if (d.format === 'port') return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 65535 ? undefined : 'not a port number';
  if (d.format === 'list') return Array.isArray(v) && v.every((x) => typeof x === 'string') ? undefined : 'not a string[]';
  if (d.boolString === true) return typeof v === 'boolean' ? undefined : 'not a boolean';
  switch (d.type) {
    case 's':
      return typeof v === 'string' ? undefined : 'not a string';
    case 'i':
      return typeof v === 'number' && Number.isInteger(v) ? undefined : 'not an integer';
    case 'f':
      return typeof v === 'number' && Number.isFinite(v) ? undefined : 'not a number';
    case 'b':
      return typeof v === 'boolean' ? undefined : 'not a boolean';
    case 'a':
      return Array.isArray(v) && v.every((x) => typeof x === 'string') ? undefined : 'not a string[]';
    case 'map':
      return 'a map key takes no default';
  }
}

/** Key names that hold credentials (spec: passwords, secrets, tokens, key passwords, API tokens). */
function looksSecret(name: string): boolean {
  const last = name.split('.').pop() ?? name;
  return /(password|passwd|passphrase|secret|token)$/i.test(last) || /(^|[_-])pass$/i.test(last);
}

t.test('section paths are unique', async (t) => {
  const seen = new Map<string, number>();
  for (const s of SECTIONS) seen.set(s.path, (seen.get(s.path) ?? 0) + 1);
  t.same(
    [...seen].filter(([, n]) => n > 1).map(([p]) => p),
    [],
  );
});

t.test('keys are unique within a section, and none is a dotted prefix of another', async (t) => {
  for (const s of SECTIONS) {
    const names = s.keys.map((k) => k.key);
    t.same(
      names.filter((n, i) => names.indexOf(n) !== i),
      [],
      `duplicates in [${s.path}]`,
    );
    // TOML cannot hold both a value at a.b and a table a.b.c.
    const prefixes = names.filter((n) => names.some((m) => m.startsWith(`${n}.`)));
    t.same(prefixes, [], `prefix keys in [${s.path}]`);
    for (const n of names) t.notOk(n === '' || n.startsWith('.') || n.endsWith('.') || n.includes('..'), `key name '${n}' in [${s.path}]`);
  }
});

t.test('every full key path is described once across sections', async (t) => {
  const owner = new Map<string, string>();
  const dupes: string[] = [];
  for (const s of SECTIONS) {
    for (const k of s.keys) {
      const f = full(s, k);
      const prev = owner.get(f);
      if (prev !== undefined) dupes.push(`${f} ([${prev}] and [${s.path}])`);
      owner.set(f, s.path);
    }
  }
  t.same(dupes, []);
  // A key of one section must not be the path of another section either.
  const paths = new Set(SECTIONS.map((s) => s.path));
  t.same(
    [...owner.keys()].filter((f) => paths.has(f)),
    [],
  );
});

t.test('defaults match their declared types, formats and allowed values', async (t) => {
  for (const s of SECTIONS) {
    for (const k of s.keys) {
      const where = `${full(s, k)}`;
      t.equal(defaultProblem(k), undefined, `default of ${where}`);
      if (k.allowed !== undefined) {
        t.ok(k.allowed.length > 0, `allowed of ${where} is non-empty`);
        t.equal(new Set(k.allowed).size, k.allowed.length, `allowed of ${where} has no repeats`);
        const values = Array.isArray(k.default) ? k.default : typeof k.default === 'string' && !REF.test(k.default) ? [k.default] : [];
        for (const v of values) t.ok(k.allowed.includes(v), `default ${v} of ${where} is allowed`);
      }
      if (typeof k.default === 'number') {
        if (k.min !== undefined) t.ok(k.default >= k.min, `default of ${where} >= min`);
        if (k.max !== undefined) t.ok(k.default <= k.max, `default of ${where} <= max`);
      }
      if (k.min !== undefined && k.max !== undefined) t.ok(k.min <= k.max, `range of ${where}`);
      if (k.unit !== undefined) t.equal(k.format, 'duration', `unit only on durations: ${where}`);
      if (k.format === 'duration') t.ok(k.unit !== undefined, `duration ${where} states its unit`);
      if (k.boolString === true) t.equal(k.type, 's', `boolString only on string keys: ${where}`);
      if (k.format === 'url' && typeof k.default === 'string' && !REF.test(k.default) && !k.default.includes('${')) {
        t.doesNotThrow(() => new URL(k.default as string), `default of ${where} is a URL`);
      }
      t.ok(k.meaning.trim().length > 0, `meaning of ${where}`);
    }
  }
});

t.test('$ref defaults name existing keys of the same kind', async (t) => {
  for (const s of SECTIONS) {
    for (const k of s.keys) {
      const m = typeof k.default === 'string' ? REF.exec(k.default) : null;
      if (m === null) continue;
      const target = lookup(m[1] ?? '');
      t.ok(target, `${full(s, k)} refers to ${m[1]}`);
      if (target === undefined) continue;
      // Chains are allowed (receiver_username -> apim.analytics.username -> super_admin.username) but
      // must end in a literal within a few steps.
      let at: KeyDef | undefined = target.def;
      const seen = new Set<KeyDef>([k]);
      while (at !== undefined && typeof at.default === 'string' && REF.test(at.default) && !seen.has(at)) {
        seen.add(at);
        at = lookup(REF.exec(at.default)?.[1] ?? '')?.def;
      }
      t.ok(at !== undefined && at.default !== undefined && !seen.has(at), `${full(s, k)}: reference chain ends in a literal`);
      if (k.secret === true || target.def.secret === true) t.equal(k.secret, target.def.secret, `${full(s, k)}: secret like ${m[1]}`);
      t.ok(k.defaultText !== undefined, `${full(s, k)} keeps the spec's wording of its default`);
    }
  }
});

t.test('secret-looking keys are marked secret', async (t) => {
  for (const s of SECTIONS) {
    for (const k of s.keys) {
      // A switch such as allow_id_token names a token but cannot hold one.
      const valueCanBeSecret = k.type === 's' && k.boolString !== true;
      if (looksSecret(k.key) && valueCanBeSecret) t.equal(k.secret, true, `${full(s, k)} is secret`);
      if (k.secret === true) t.ok(valueCanBeSecret, `${full(s, k)}: only string values are secret`);
    }
  }
  // Rows whose names do not say so but hold credentials.
  t.equal(key('transport.passthru_http.sender.parameters', 'proxyProfiles').secret, true);
  t.equal(key('multi_tenancy.platform.payment', 'signature').secret, true);
  t.equal(key('security_audit', 'api_token').secret, true);
  t.equal(key('apim.ai', 'token').secret, true);
  t.equal(key('transport.passthru_https', 'listener.key_store.key_password').secret, true);
});

t.test('enabledBy names a boolean switch', async (t) => {
  for (const s of SECTIONS) {
    if (s.enabledBy === undefined) continue;
    const target = lookup(s.enabledBy);
    t.ok(target, `[${s.path}] enabledBy ${s.enabledBy} exists`);
    if (target !== undefined) t.ok(isBoolish(target.def), `${s.enabledBy} is a boolean`);
  }
  t.equal(section('apim.analytics').enabledBy, 'apim.analytics.enable');
  t.equal(section('apim.jwt').enabledBy, 'apim.jwt.enable');
  t.equal(section('server_health_check').enabledBy, 'server_health_check.enable');
  t.equal(section('apim.cors').enabledBy, 'apim.cors.enable');
  t.equal(section('apim.transport_headers').enabledBy, 'apim.transport_headers.enabled');
});

t.test('sources, order and counts', async (t) => {
  t.ok(
    DOC000_SECTIONS.every((s) => s.source === '000'),
    'doc000 sections say 000',
  );
  t.ok(
    DOC001_SECTIONS.every((s) => s.source === '001'),
    'doc001 sections say 001',
  );
  t.ok(
    THROUGHWAY_SECTIONS.every((s) => s.source === 'throughway' && s.runs),
    'throughway sections run',
  );
  t.ok(
    REFERENCE_SECTIONS.every((s) => s.source === 'reference'),
    "the reference's own tables say reference",
  );
  t.same(
    SECTIONS.map((s) => s.path),
    [...DOC000_SECTIONS, ...DOC001_SECTIONS, ...REFERENCE_SECTIONS, ...THROUGHWAY_SECTIONS].map((s) => s.path),
    'spec order',
  );
  const keys = SECTIONS.reduce((n, s) => n + s.keys.length, 0);
  t.ok(SECTIONS.length >= 105, `section count ${SECTIONS.length}`);
  t.ok(keys >= 620, `key count ${keys}`);
  t.ok(
    SECTIONS.every((s) => s.keys.length > 0),
    'no empty section',
  );
  t.ok(Number.isInteger(SCHEMA_VERSION) && SCHEMA_VERSION >= 1, 'schema version');
  // Placeholders are whole segments written <name>.
  for (const s of SECTIONS)
    for (const seg of s.path.split('.')) t.ok(!/[<>]/.test(seg) || /^<[a-z_]+>$/.test(seg), `segment ${seg} of [${s.path}]`);
});

t.test('spot checks against the spec', async (t) => {
  t.equal(key('passthru_http', 'http.socket.timeout').default, 180000);
  t.equal(key('passthru_http', 'http.socket.timeout').unit, 'ms');
  t.same(key('passthru_http', 'http.headers.preserve').default, ['Content-Type']);
  t.equal(key('passthru_http', 'worker_pool_queue_length').default, -1);
  t.equal(key('transport.passthru_http', 'listener.parameters.port').default, 8280);
  t.equal(key('transport.passthru_https', 'listener.parameters.port').default, 8243);
  t.equal(key('transport.passthru_https', 'listener.parameters.port').format, 'port');
  t.equal(key('transport.https.properties', 'port').default, 9443);
  t.equal(key('transport.http.properties', 'port').default, 9763);
  t.equal(key('transport.ws', 'port').default, 9099);
  t.equal(key('transport.wss', 'port').default, 8099);
  t.equal(key('server', 'offset').default, 0);
  t.same(key('server', 'server_role').allowed, [
    'default',
    'api-devportal',
    'api-key-manager',
    'api-publisher',
    'gateway-worker',
    'traffic-manager',
  ]);
  t.equal(key('super_admin', 'create_admin_account').boolString, true);
  t.equal(key('super_admin', 'create_admin_account').default, true);
  t.equal(key('database.apim_db', 'pool_options.maxActive').default, '50');
  t.equal(key('database.apim_db', 'pool_options.maxWait').default, 60000);
  t.same(key('database.apim_db', 'type').allowed, ['mysql', 'h2', 'mssql', 'postgre', 'oracle', 'db2']);
  t.same(key('apim.cors', 'allow_methods').default, ['GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'OPTIONS']);
  t.equal(key('apim.cors', 'allow_methods').format, 'list');
  t.same(key('apim.cors', 'allow_headers').default, ['authorization', 'Access-Control-Allow-Origin', 'Content-Type', 'SOAPAction']);
  t.equal(key('mediation', 'engine.core_threads').default, 20);
  t.equal(key('mediation', 'engine.global_timeout_interval').default, 120000);
  t.equal(key('apim.cache.gateway_token', 'expiry_time').default, 15);
  t.equal(key('apim.cache.gateway_token', 'expiry_time').unit, 'm');
  t.equal(key('apim.gateway.environment', 'username').default, '$ref{super_admin.username}');
  t.equal(key('apim.analytics', 'receiver_username').default, '$ref{apim.analytics.username}');
  t.same(key('apim.analytics.url_group', 'analytics_url').default, ['tcp://localhost:7612']);
  t.same(key('apim.analytics.url_group', 'analytics_auth_url').default, ['ssl://localhost:7712']);
  t.equal(key('apim.throttling.event_sync', 'port').default, 11224);
  t.equal(key('apim.throttling.event_management', 'port').default, 10005);
  t.equal(key('apim.throttling.url_group', 'publisher.keep_alive_time').default, 200);
  t.equal(key('apim.throttling.url_group', 'publisher.keep_alive_time').unit, 's');
  t.equal(key('apim.open_tracer', 'remote_tracer.properties.port').default, 9411);
  t.equal(key('apim.workflow', 'service_url').default, 'https://localhost:9445/bpmn');
  t.equal(key('mediation', 'engine.command_debugger_port').default, 9005);
  t.equal(key('mediation', 'engine.event_debugger_port').default, 9006);
  t.equal(key('oauth.token_validation', 'refresh_token_validity').default, 86400);
  t.equal(key('oauth.grant_type.kerberos', 'enable').default, false);
  t.ok(key('oauth.grant_type.jwt_bearer', 'grant_validator'));
  t.equal(key('user_store.properties', 'MembershipAttributeRange').default, 1500);
  t.equal(key('indexing', 'bach_size').default, '40');
  t.equal(key('server_health_check.health_checker.data_source_health_checker.properties', 'pool_usage_limit_percentage').default, 80);
  t.same(key('apim.sdk', 'supported_languages').default, ['android', 'java', 'javascript', 'jmeter']);
  t.equal(key('', 'enabled_global_handlers').type, 'a');
  t.ok(section('apim.gateway.environment').repeatable);
  t.ok(section('apim.throttling.url_group').repeatable);
  t.ok(section('apim.jwt.issuer.claim_mapping').repeatable);
  t.ok(section('custom_keystore.<keystore_name>'));
  t.ok(section('multi_tenancy.billing.package.<package_key>.bandwidth'));
});

t.test('runs: gateway features and the developer portal run, platform features do not', async (t) => {
  for (const p of [
    'server',
    'apim.jwt',
    'apim.gateway.environment',
    'apim.devportal',
    'apim.cors',
    'apim.throttling',
    'transport.passthru_http',
    'passthru_http',
    'transport.ws',
    'mediation',
    'oauth.grant_type.password',
    'apim.transport_headers',
    'throughway',
    'oauth.oidc',
    'tenant_mgt',
    'multi_tenancy.platform',
    'apim.workflow',
    'apim.sdk',
    'apim.notifications',
    'output_adapter.email',
    'multi_tenancy.billing.package.<package_key>',
    'security_audit',
  ]) {
    t.equal(section(p).runs, true, `[${p}] runs`);
  }
  for (const p of [
    'apim.ai',
    'indexing',
    'registry_handler',
    'governance',
    'broker.heartbeat',
    'transport.blocking_http',
    'engine_handlers',
    'apim.cache.recent_apis',
    'apim.cache.publisher_roles',
    'apim.cache.tags',
  ]) {
    t.equal(section(p).runs, false, `[${p}] does not run`);
  }
});

t.test('the [throughway] section', async (t) => {
  const want: Record<string, unknown> = {
    log_level: 'info',
    connect_timeout: 10000,
    header_timeout: 30000,
    keepalive_timeout: 60000,
    pool_idle_timeout: 30000,
    max_request_body: -1,
    high_water_mark: 1048576,
    read_buffer_size: 262144,
    shutdown_timeout: 30000,
    via: '1.1 throughway',
    x_forwarded: true,
    retry_stale: true,
    apis_dir: 'apis',
    fault_templates_file: 'fault-templates.toml',
    access_log_file: 'logs/http_access.log',
  };
  for (const [k, v] of Object.entries(want)) t.same(key('throughway', k).default, v, `throughway.${k}`);
  t.same(key('throughway.cluster', 'workers').default, '1', 'worker processes live in [throughway.cluster] (docs/scale-out.md)');
  t.same(key('throughway', 'log_level').allowed, ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);
  t.equal(key('throughway.demo', 'enable').default, false);
  t.equal(key('throughway.demo', 'port').default, 9000);
  t.equal(key('throughway.throttling', 'policies_file').default, 'policies.toml');
  t.equal(key('throughway.throttling', 'counter_store').default, 'memory');
});

// ------------------------------------------------------------------ the reference's deployment.toml files

function fixtureDir(): string | undefined {
  const repo = path.resolve(__dirname, '../../..');
  for (const d of [path.join(repo, 'test/fixtures/deployment-toml'), path.resolve(repo, '../shared/fixtures/deployment-toml')]) {
    if (fs.existsSync(d)) return d;
  }
  return undefined;
}

const isTable = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date);

/** The section whose path matches the longest prefix of `segs` (placeholders match any one name). */
function sectionOf(segs: readonly string[]): { section: SectionDef; rest: string[] } | undefined {
  let best: { section: SectionDef; rest: string[] } | undefined;
  let bestLen = -1;
  for (const s of SECTIONS) {
    const sp = s.path === '' ? [] : s.path.split('.');
    if (sp.length > segs.length) continue;
    if (!sp.every((x, i) => x === segs[i] || /^<.+>$/.test(x))) continue;
    const rest = segs.slice(sp.length);
    if (
      sp.length > bestLen &&
      s.keys.some((k) => rest.join('.') === k.key || rest.join('.').startsWith(`${k.key}.`) || rest.length === 0)
    ) {
      best = { section: s, rest };
      bestLen = sp.length;
    }
  }
  return best;
}

/** Whether a raw TOML value is acceptable for a key (the loader's conversion rules, schema-types.ts). */
function acceptable(d: KeyDef, v: unknown): boolean {
  if (typeof v === 'string' && v.includes('${')) return true;
  const scalar = typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
  let ok: boolean;
  if (d.format === 'list') ok = scalar || (Array.isArray(v) && v.every((x) => typeof x === 'string'));
  else if (d.format === 'duration') ok = typeof v === 'number' || (typeof v === 'string' && /^\s*-?\d+(\.\d+)?\s*[a-z]*\s*$/i.test(v));
  else if (d.format === 'port') ok = (typeof v === 'number' && Number.isInteger(v)) || (typeof v === 'string' && /^\d+$/.test(v));
  else if (isBoolish(d)) ok = typeof v === 'boolean' || (typeof v === 'string' && /^(true|false)$/i.test(v));
  else if (d.type === 's') ok = scalar;
  else if (d.type === 'i') ok = typeof v === 'number' && Number.isInteger(v);
  else if (d.type === 'f') ok = typeof v === 'number';
  else if (d.type === 'a') ok = Array.isArray(v) && v.every((x) => typeof x === 'string');
  else ok = isTable(v);
  if (ok && d.allowed !== undefined) {
    const values = Array.isArray(v) ? v : typeof v === 'string' ? (d.format === 'list' ? v.split(',').map((x) => x.trim()) : [v]) : [];
    ok = values.every((x) => d.allowed?.includes(String(x)) === true);
  }
  return ok;
}

const FIXTURES = fixtureDir();

t.test(
  "the reference's deployment.toml files fit the schema",
  { skip: FIXTURES === undefined ? 'fixtures not found (test/fixtures/deployment-toml or ../shared/fixtures/deployment-toml)' : false },
  async (t) => {
    const dir = FIXTURES ?? '';
    const files = fs.readdirSync(dir).filter((f) => f.endsWith('.toml'));
    t.ok(files.length >= 4, 'four fixtures');
    for (const file of files) {
      const doc: unknown = toml.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
      const problems: string[] = [];
      const written = new Map<string, { section: SectionDef; table: Record<string, unknown> }>();
      // Leaves: every known key's value must convert; unknown keys are only warnings for the loader.
      const walk = (v: unknown, segs: string[]): void => {
        if (isTable(v)) {
          const m = sectionOf(segs);
          if (m !== undefined && m.rest.length === 0) written.set(segs.join('.'), { section: m.section, table: v });
          for (const [k, c] of Object.entries(v)) {
            const hit = sectionOf([...segs, k]);
            const d = hit?.section.keys.find((x) => x.key === hit.rest.join('.'));
            if (d !== undefined && d.type === 'map') continue;
            if (d !== undefined) {
              if (!acceptable(d, c)) problems.push(`${[...segs, k].join('.')} = ${JSON.stringify(c)}`);
            } else walk(c, [...segs, k]);
          }
        } else if (Array.isArray(v) && v.every(isTable)) {
          for (const e of v) walk(e, segs);
        }
      };
      walk(doc, []);
      t.same(problems, [], `${file}: values fit their keys`);
      // Required keys of written, running, switched-on tables (active, without default) are present.
      const missing: string[] = [];
      for (const [at, { section: s, table }] of written) {
        if (!s.runs) continue;
        if (s.enabledBy !== undefined) {
          const sw = lookup(s.enabledBy);
          const rel = s.enabledBy.startsWith(`${s.path}.`) ? s.enabledBy.slice(s.path.length + 1) : undefined;
          const raw = rel !== undefined ? table[rel] : undefined;
          const on = raw !== undefined ? raw === true || String(raw).toLowerCase() === 'true' : sw?.def.default === true;
          if (!on) continue;
        }
        for (const k of s.keys) {
          if (k.required !== true || k.inactive !== undefined || k.default !== undefined) continue;
          let v: unknown = table;
          for (const seg of k.key.split('.')) v = isTable(v) ? v[seg] : undefined;
          if (v === undefined) missing.push(`${at}.${k.key}`);
        }
      }
      t.same(missing, [], `${file}: required keys present`);
    }
  },
);
