/**
 * The schema's status marks (lib/config/key-status.ts) against the code: every key of a running section
 * that is not marked `inactive` is read by some module of lib/ outside the loader, and every key the code
 * reads through the typed configuration is not marked `inactive`. So a key cannot be presented as acting
 * while nothing reads it (docs/migrating.md lists every key with its status), and a key cannot start
 * acting while `config check` still calls it not acted on.
 *
 * Reads are found by scripts/key-reads.ts (the TypeScript checker resolves every property access to the
 * generated configuration interfaces). A few modules read keys in ways the checker cannot follow: by a
 * dotted path held in a string (ports), by a structural parameter type (stores, proxies, pools), or by
 * iterating a table (message builders). Those are named in READ_ELSEWHERE with the file that reads them,
 * and the file must name each key.
 */
import t from 'tap';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { SECTIONS } from '../../lib/config/schema';
import { inactiveReason, isSpecSection, keyStatus } from '../../lib/config/key-status';
import { findKeyReads, NOT_READERS } from '../../scripts/key-reads';

const root = join(__dirname, '..', '..', '..');
// The checker builds a TypeScript program over lib/: 29 s alone, up to 64 s beside other suites on two shared
// cores (node dist/scripts/key-reads.js; tap runs of this file), near tap's per-file timeout (.taprc).
t.setTimeout(300_000);

interface ReadElsewhere {
  readonly section: string;
  /** Keys of the section (all of them when absent). */
  readonly keys?: readonly string[];
  readonly file: string;
}

const TRUST = ['file_name', 'type', 'password'];
const KEY = [...TRUST, 'key_password'];
const storeKeys = (prefix: string): string[] => [
  ...KEY.map((k) => `${prefix}.key_store.${k}`),
  ...TRUST.map((k) => `${prefix}.trust_store.${k}`),
];

const READ_ELSEWHERE: readonly ReadElsewhere[] = [
  // Both e-mail tables through smtpSettings' structural parameter (one table type for both).
  { section: 'apim.notifications', file: 'lib/mail/settings.ts' },
  { section: 'output_adapter.email', file: 'lib/mail/settings.ts' },
  // Each listening port by its dotted path; the offset by its segments (LISTENING_PORTS, effectivePorts).
  { section: 'server', keys: ['offset'], file: 'lib/config/ports.ts' },
  // The connection keys through databaseMapping/connectionTarget, the pool through poolSettings (structural types).
  { section: 'database.apim_db', keys: ['type', 'url'], file: 'lib/config/database.ts' },
  {
    section: 'database.apim_db',
    keys: [
      'hostname',
      'port',
      'username',
      'password',
      'validationQuery',
      'pool_options.maxActive',
      'pool_options.maxWait',
      'pool_options.testOnBorrow',
      'pool_options.validationInterval',
      'pool_options.defaultAutoCommit',
    ],
    file: 'lib/store/pool.ts',
  },
  // shared_db's table goes the same ways when it has a url of its own (lib/store/open.ts sharedDatabase).
  { section: 'database.shared_db', keys: ['type', 'url'], file: 'lib/config/database.ts' },
  { section: 'database.shared_db', keys: ['username', 'password'], file: 'lib/store/pool.ts' },
  // `https ? https.properties : http.properties`: the checker reduces the union to the HTTP table's type.
  {
    section: 'transport.https.properties',
    keys: ['keepAliveTimeout', 'maxKeepAliveRequests', 'acceptCount', 'maxHttpHeaderSize', 'connectionTimeout'],
    file: 'lib/keymanager/listener.ts',
  },
  // The global proxy and the option-2 profiles through structural parameter types.
  {
    section: 'transport.passthru_http',
    keys: ['sender.http.proxyHost', 'sender.http.proxyPort', 'sender.http.nonProxyHosts'],
    file: 'lib/tls/proxy.ts',
  },
  {
    section: 'transport.passthru_https',
    keys: ['sender.http.proxyHost', 'sender.http.proxyPort', 'sender.http.nonProxyHosts'],
    file: 'lib/tls/proxy.ts',
  },
  { section: 'transport.http.secured_proxy_profile', file: 'lib/tls/proxy.ts' },
  // Store tables through storeRef's structural parameter; the server's stores copied into them by name.
  { section: 'transport.passthru_https', keys: [...storeKeys('listener'), ...storeKeys('sender')], file: 'lib/tls/settings.ts' },
  { section: 'keystore.primary', keys: KEY, file: 'lib/config/stores.ts' },
  { section: 'keystore.tls', keys: KEY, file: 'lib/config/stores.ts' },
  { section: 'truststore', keys: TRUST, file: 'lib/config/stores.ts' },
  // The tables iterated by buildTable: each key is a content type of formats.ts.
  { section: 'message_builders', file: 'lib/mediation/formats.ts' },
  { section: 'message_formatters', file: 'lib/mediation/formats.ts' },
  { section: 'custom_message_builders', file: 'lib/mediation/formats.ts' },
  { section: 'custom_message_formatters', file: 'lib/mediation/formats.ts' },
];

const lastName = (key: string): string => key.slice(key.lastIndexOf('.') + 1);

/** The text of every module that counts as a reader (lib/ outside the loader, the printer and the schema). */
function readerTexts(): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const name of require('node:fs').readdirSync(join(root, dir), { withFileTypes: true }) as import('node:fs').Dirent[]) {
      const rel = `${dir}/${name.name}`;
      if (name.isDirectory()) {
        if (rel !== 'lib/config/schema') walk(rel);
      } else if (rel.endsWith('.ts') && !NOT_READERS.includes(rel)) out.set(rel, readFileSync(join(root, rel), 'utf8'));
    }
  };
  walk('lib');
  return out;
}

t.test('every key presented as acting is read by the code; every key read is not marked inactive', async (t) => {
  const reads = findKeyReads(root);
  t.ok(reads.size > 100, `the checker finds the typed reads (${reads.size})`);
  const texts = readerTexts();
  const named = (full: string): boolean => [...texts.values()].some((text) => text.includes(`'${full}'`));
  const elsewhere = (section: string, key: string): ReadElsewhere | undefined =>
    READ_ELSEWHERE.find((r) => r.section === section && (r.keys === undefined || r.keys.includes(key)));
  const unread: string[] = [];
  const readButInactive: string[] = [];
  for (const s of SECTIONS.filter(isSpecSection)) {
    for (const k of s.keys) {
      const status = keyStatus(s, k);
      const typed = reads.get(`${s.path}|${k.key}`);
      if (status === 'inactive') {
        if (typed !== undefined) readButInactive.push(`[${s.path}] ${k.key} (read at ${typed[0]})`);
        continue;
      }
      if (typed !== undefined || named(`${s.path}.${k.key}`)) continue;
      const e = elsewhere(s.path, k.key);
      if (e !== undefined) {
        const text = texts.get(e.file);
        t.ok(text !== undefined && text.includes(lastName(k.key)), `[${s.path}] ${k.key}: ${e.file} names it`);
        continue;
      }
      unread.push(`[${s.path}] ${k.key}`);
    }
  }
  t.same(unread, [], 'keys marked acts/differs that nothing reads: read them, or mark them inactive');
  t.same(readButInactive, [], 'keys marked inactive that the code reads: remove the marker (or mark differs with the why)');
});

t.test('READ_ELSEWHERE names only keys of the schema, in files that exist', async (t) => {
  for (const r of READ_ELSEWHERE) {
    const s = SECTIONS.find((x) => x.path === r.section);
    t.ok(s !== undefined, `${r.section} is a section`);
    t.ok(existsSync(join(root, r.file)), `${r.file} exists`);
    for (const k of r.keys ?? [])
      t.ok(
        s?.keys.some((d) => d.key === k),
        `[${r.section}] ${k} is a key`,
      );
  }
});

t.test('each key that acts differently says why in one line', async (t) => {
  let n = 0;
  for (const s of SECTIONS) {
    for (const k of s.keys) {
      if (k.differs === undefined) continue;
      n++;
      t.ok(k.differs.length > 10 && k.differs.length <= 240 && !k.differs.includes('\n'), `[${s.path}] ${k.key}: one line`);
      t.notOk(k.inactive !== undefined, `[${s.path}] ${k.key}: not both differs and inactive`);
    }
  }
  t.ok(n > 0, 'some keys act differently');
});

t.test("every key not acted on says why in one line (its own reason or its section's)", async (t) => {
  // docs/migrating.md's key table and `config check` show the reason; a key marked inactive without one,
  // or a section that does not run without notRun, fails here.
  const missing: string[] = [];
  const long: string[] = [];
  let n = 0;
  for (const s of SECTIONS.filter(isSpecSection)) {
    for (const k of s.keys) {
      if (keyStatus(s, k) !== 'inactive') continue;
      n++;
      const why = inactiveReason(s, k);
      if (why === undefined || why.trim().length < 20) missing.push(`[${s.path}] ${k.key}`);
      else if (why.length > 240 || why.includes('\n')) long.push(`[${s.path}] ${k.key}`);
    }
  }
  t.ok(n > 300, `the keys not acted on are counted (${n})`);
  t.same(missing, [], 'keys not acted on without a reason');
  t.same(long, [], 'reasons longer than one line');
});

t.test('every key that acts is named by some test', async (t) => {
  // A test file or fixture that writes or names the key (its last name): a key nothing exercises cannot be
  // said to act as the spec describes. A coarse net: a last name two keys share (bind-address of the HTTP
  // and HTTPS listeners) counts for both.
  const texts: string[] = [];
  const walk = (dir: string): void => {
    for (const d of require('node:fs').readdirSync(join(root, dir), { withFileTypes: true }) as import('node:fs').Dirent[]) {
      const rel = `${dir}/${d.name}`;
      if (d.isDirectory()) walk(rel);
      else if (/\.(ts|toml)$/.test(d.name)) texts.push(readFileSync(join(root, rel), 'utf8'));
    }
  };
  walk('test');
  walk('conf');
  const all = texts.join('\n');
  const missing: string[] = [];
  for (const s of SECTIONS.filter(isSpecSection)) {
    for (const k of s.keys) if (keyStatus(s, k) !== 'inactive' && !all.includes(lastName(k.key))) missing.push(`[${s.path}] ${k.key}`);
  }
  t.same(missing, [], 'acting keys no test names');
});
