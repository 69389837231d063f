/**
 * [throughway] trusted_proxies is an address list (format 'cidr'): an entry that is neither an IP address
 * nor a CIDR range is a configuration diagnostic, CONFIG_ADDRESS, at the entry's own line and column and
 * naming it, from `config check` and `start --check` alike; before, the transport threw at start-up with
 * no position. The transport's matcher reads entries with the same function (config/convert.ts).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFile } from 'node:child_process';
import t from 'tap';
import { CLI, brief, errors, load } from './helpers';
import { parseSubnet } from '../../lib/config/convert';
import { trustedMatcher } from '../../lib/transport/trusted';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-trusted-'));
t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }));

function run(args: string[], cwd: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd, encoding: 'utf8' }, (err, stdout, stderr) => {
      resolve({ status: err === null ? 0 : typeof err.code === 'number' ? err.code : null, stdout, stderr });
    });
  });
}

t.test('addresses and ranges of both families are accepted as written', async (t) => {
  const r = load('[throughway]\ntrusted_proxies = ["10.0.0.0/8", "192.0.2.7", "::1", "2001:db8::/32", "0.0.0.0/0", "::ffff:10.1.2.3"]\n');
  t.same(brief(r), []);
  t.same(r.config?.throughway.trusted_proxies, ['10.0.0.0/8', '192.0.2.7', '::1', '2001:db8::/32', '0.0.0.0/0', '::ffff:10.1.2.3']);
});

t.test('each kind of bad entry: CONFIG_ADDRESS at the entry, naming it', async (t) => {
  for (const bad of ['proxy.example', '10.0.0.0/33', '10.0.0.0/', '1.2.3', '2001:db8::/129', '10.0.0.0/8/8', '10.0.0.0/-1', '']) {
    const r = load(`[throughway]\ntrusted_proxies = ["127.0.0.1", ${JSON.stringify(bad)}]\n`);
    const e = errors(r);
    t.equal(e.length, 1, `${JSON.stringify(bad)}: one error`);
    t.equal(e[0]?.code, 'CONFIG_ADDRESS', bad);
    t.equal(e[0]?.key, 'throughway.trusted_proxies[1]', `${bad}: the entry's own path`);
    t.equal(e[0]?.line, 2);
    t.equal(e[0]?.column, 33, `${bad}: the column of the entry, not of the key`);
    t.equal(e[0]?.message, `${JSON.stringify(bad)} is neither an IP address nor a CIDR range`);
    t.equal(r.ok, false);
  }
});

t.test('every bad entry is its own diagnostic (config check lists them all at once)', async (t) => {
  const r = load('[throughway]\ntrusted_proxies = [\n  "lb-a.internal",\n  "10.0.0.0/8",\n  "10.0.0.0/40",\n]\n');
  t.same(
    errors(r).map((d) => `${d.code} ${d.key} @${d.line}:${d.column}`),
    ['CONFIG_ADDRESS throughway.trusted_proxies[0] @3:3', 'CONFIG_ADDRESS throughway.trusted_proxies[2] @5:3'],
  );
});

t.test('a number where an entry belongs is refused the same way', async (t) => {
  const r = load('[throughway]\ntrusted_proxies = [10]\n');
  t.same(
    errors(r).map((d) => `${d.code} ${d.key}`),
    ['CONFIG_ADDRESS throughway.trusted_proxies[0]'],
  );
});

t.test('config check and start --check print file:line:column, the code, the key and the entry', async (t) => {
  const dir = fs.mkdtempSync(path.join(tmp, 'node-'));
  fs.mkdirSync(path.join(dir, 'conf'));
  fs.writeFileSync(
    path.join(dir, 'conf', 'deployment.toml'),
    '[server]\nhostname = "localhost"\n\n[throughway]\ntrusted_proxies = [\n  "10.0.0.0/8",\n  "lb.internal",\n]\n',
  );
  const [check, start] = await Promise.all([run(['config', 'check'], dir), run(['start', '--check'], dir)]);
  const want =
    'conf/deployment.toml:7:3: error CONFIG_ADDRESS throughway.trusted_proxies[1]: "lb.internal" is neither an IP address nor a CIDR range';
  for (const [name, r] of [
    ['config check', check],
    ['start --check', start],
  ] as const) {
    t.equal(r.status, 1, `${name} exits 1`);
    t.match(r.stderr, want, `${name} names file, line, column, key and entry`);
    t.match(r.stderr, '  7 |   "lb.internal",', `${name} shows the line`);
    t.notMatch(r.stderr, /TypeError/, `${name}: no exception`);
  }
});

t.test('the transport reads entries with the same function', async (t) => {
  t.same(parseSubnet('10.0.0.0/8'), { address: '10.0.0.0', bits: 8, family: 'ipv4' });
  t.same(parseSubnet(' ::1 '), { address: '::1', bits: 128, family: 'ipv6' });
  t.same(parseSubnet('::ffff:10.1.2.3'), { address: '10.1.2.3', bits: 32, family: 'ipv4' });
  t.equal(parseSubnet('10.0.0.0/ 8'), undefined);
  const m = trustedMatcher(['10.0.0.0/8']);
  t.ok(m?.check('10.200.0.1', 'ipv4'));
  t.throws(() => trustedMatcher(['lb.internal']), /"lb.internal" is neither an IP address nor a CIDR range/);
});
