/** The policies file: the reference's defaults, validation with file:line, enable_unlimited_tier. */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import {
  DEFAULT_POLICIES_TOML,
  loadPolicies,
  parsePolicies,
  formatPolicyDiagnostic,
  DEFAULT_POLICY_OPTIONS,
} from '../../lib/throttle/policies';
import { parseApiText } from '../../lib/gateway/apis';
import { policyNames } from '../../lib/throttle/policies';

const CONF = path.resolve(__dirname, '../../../conf/policies.toml');

t.test('the reference defaults, out of the box and in conf/policies.toml alike', async (t) => {
  const builtIn = parsePolicies(DEFAULT_POLICIES_TOML, '');
  const conf = loadPolicies(CONF);
  t.same(conf.diagnostics, [], 'conf/policies.toml is valid');
  for (const p of [builtIn.policies, conf.policies]) {
    t.ok(p);
    if (p === undefined) continue;
    const limits = (m: ReadonlyMap<string, { quota: { limit: number; windowMs: number } }>): Record<string, string> =>
      Object.fromEntries([...m].map(([k, v]) => [k, v.quota.limit < 0 ? 'unlimited' : `${v.quota.limit}/${v.quota.windowMs}`]));
    t.same(limits(p.subscription), {
      Gold: '5000/60000',
      Silver: '2000/60000',
      Bronze: '1000/60000',
      Unlimited: 'unlimited',
      Unauthenticated: '500/60000',
    });
    t.same(limits(p.application), { '10PerMin': '10/60000', '20PerMin': '20/60000', '50PerMin': '50/60000', Unlimited: 'unlimited' });
    t.same(limits(p.api), { '10KPerMin': '10000/60000', '20KPerMin': '20000/60000', '50KPerMin': '50000/60000', Unlimited: 'unlimited' });
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-pol-'));
  const missing = loadPolicies(path.join(dir, 'none.toml'));
  t.equal(missing.policies?.subscription.get('Gold')?.quota.limit, 5000, 'a missing file means the defaults');
  fs.rmSync(dir, { recursive: true });
});

t.test('validation errors name file:line and field', async (t) => {
  const text = `[[subscription]]
name = "A"
request_count = 0

[[subscription]]
name = "B"
request_count = 5
time_unit = "minute"

[[application]]
name = "C"
request_count = 5
data_amount = 5

[[api]]
name = "D"
request_count = 1
[[api.condition_group]]
request_count = 1
[[api.condition_group.condition]]
type = "ip_range"
value = "10.0.0.9-10.0.0.1"

[[custom]]
name = "E"
key_template = "$user"
request_count = 1

[[application]]
name = "G"
request_count = 7
[[application]]
name = "G"
request_count = 8
[[application]]
nmae = "F"
`;
  const r = parsePolicies(text, 'policies.toml');
  t.equal(r.policies, undefined, 'an invalid file gives no policies');
  const got = r.diagnostics.map((d) => [d.code, d.line, d.field]);
  t.same(got, [
    ['POLICY_VALUE', 3, 'subscription[0].request_count'],
    ['POLICY_VALUE', 8, 'subscription[1].time_unit'],
    ['POLICY_VALUE', 13, 'application[0].data_amount'],
    ['POLICY_UNKNOWN_FIELD', 36, 'application[3].nmae'],
    ['POLICY_REQUIRED', 35, 'application[3]'],
    ['POLICY_REQUIRED', 35, 'application[3]'],
    ['POLICY_VALUE', 22, 'api[0].condition_group[0].condition[0].value'],
    ['POLICY_VALUE', 26, 'custom[0].key_template'],
    ['POLICY_DUPLICATE', 33, 'application[2].name'],
  ]);
  t.match(
    formatPolicyDiagnostic(r.diagnostics[1]!),
    /^policies\.toml:8: error POLICY_VALUE subscription\[1\]\.time_unit: "minute" is not one of sec, min, hour, day$/,
  );
  const syntax = parsePolicies('[[api]\n', 'p.toml');
  t.same([syntax.diagnostics[0]?.code, syntax.diagnostics[0]?.line], ['POLICY_SYNTAX', 1]);
});

t.test('enable_unlimited_tier = false removes Unlimited; an API file naming it is then an error', async (t) => {
  const off = parsePolicies(DEFAULT_POLICIES_TOML, '', { ...DEFAULT_POLICY_OPTIONS, enableUnlimitedTier: false });
  t.ok(off.policies);
  t.equal(off.policies?.subscription.has('Unlimited'), false);
  t.equal(off.policies?.application.has('Unlimited'), false);
  t.equal(off.policies?.api.has('Unlimited'), false);
  t.equal(off.diagnostics.filter((d) => d.code === 'POLICY_UNLIMITED_DISABLED').length, 3);
  const api =
    'name = "x"\ncontext = "/x"\nversion = "1"\nauth = "none"\nunauthenticated_policy = "Unlimited"\n[endpoints]\nproduction = "http://127.0.0.1:9"\n[[resources]]\npath = "/a"\nmethods = ["GET"]\npolicy = "10KPerMin"\n';
  const bad = parseApiText(api, 'apis/x.toml', {}, policyNames(off.policies!));
  t.equal(bad.api, undefined, 'refused');
  t.same(
    bad.diagnostics.filter((d) => d.level === 'error').map((d) => [d.code, d.line, d.field]),
    [['API_VALUE', 5, 'unauthenticated_policy']],
  );
  t.match(bad.diagnostics[0]?.message, /enable_unlimited_tier is false/);
  const on = parsePolicies(DEFAULT_POLICIES_TOML, '');
  t.ok(parseApiText(api, 'apis/x.toml', {}, policyNames(on.policies!)).api, 'with the unlimited tier the same file deploys');
  const typo = parseApiText(api.replace('"10KPerMin"', '"10kPerMin"'), 'apis/x.toml', {}, policyNames(on.policies!));
  t.match(
    typo.diagnostics.find((d) => d.level === 'error')?.message,
    /"10kPerMin" is not an \[\[api\]\] policy of the policies file; did you mean "10KPerMin"\?/,
  );
  t.equal(typo.diagnostics.find((d) => d.level === 'error')?.line, 11);
});
