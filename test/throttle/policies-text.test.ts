/**
 * Policies from a text (a gateway-worker's, pulled from its control plane: docs/scale-out.md): created
 * from one, replaced by loadText() with the file's validation (a text with errors is refused with
 * source:line, logged, and the running policies and their counters stay), an invalid first text throws.
 */
import t from 'tap';
import { loadConfig } from '../../lib/config/load';
import { createLogger } from '../../lib/log';
import { createThrottle, ThrottleConfigError } from '../../lib/throttle';
import { throttleSettingsFrom } from '../../lib/throttle/settings';

const settings = (toml = ''): ReturnType<typeof throttleSettingsFrom> => {
  const loaded = loadConfig({ text: toml, env: {} });
  return throttleSettingsFrom(loaded.config, '/nonexistent-dir');
};

const text = (n: number): string => `[[subscription]]\nname = "Unlimited"\nunlimited = true\n[[api]]\nname = "Few"\nrequest_count = ${n}\n`;

t.test('createThrottle from a text; loadText replaces it, refuses a broken one', async (t) => {
  const lines: string[] = [];
  const logger = createLogger('info', { write: (l: string) => lines.push(l) });
  const th = createThrottle({ settings: settings(), logger, policies: { text: text(5), source: 'http://cp/policies.toml' } });
  t.teardown(() => th.close());
  t.equal(th.source, 'http://cp/policies.toml');
  t.equal(th.policies().api.get('Few')?.quota.limit, 5, 'the text, not the (missing) file');
  t.ok(th.names().api.has('Few'));
  t.notOk(th.policies().subscription.has('Gold'), 'not the default tiers of a missing file');

  const g = th.generation;
  const ok = th.loadText(text(3), 'http://cp/policies.toml');
  t.same(ok, { ok: true, errors: [] });
  t.equal(th.policies().api.get('Few')?.quota.limit, 3);
  t.equal(th.generation, g + 1, 'the gateway revalidates its APIs after it');

  const bad = th.loadText('[[api]]\nname = "Few"\nrequest_count = -1\n', 'http://cp/policies.toml');
  t.equal(bad.ok, false);
  t.match(bad.errors[0], /^http:\/\/cp\/policies\.toml:3: /, 'errors name the source and line');
  t.equal(th.policies().api.get('Few')?.quota.limit, 3, 'the running policies stay');
  t.equal(th.generation, g + 1);
  t.ok(
    lines.some((l) => l.includes('"event":"throttle_policies_reload_refused"') && l.includes('the policies text has errors')),
    'refusal logged',
  );
  t.equal(th.loadText('not = [toml', 'x').ok, false, 'not TOML: refused');

  // reload() reads the file again (absent: the default tiers).
  t.equal(th.reload().ok, true);
  t.ok(th.policies().subscription.has('Gold'));
  t.equal(th.source, th.settings.policiesFile);
});

t.test('an invalid first text throws ThrottleConfigError, as an invalid file does', async (t) => {
  t.throws(
    () =>
      createThrottle({ settings: settings(), logger: createLogger('silent'), policies: { text: '[[api]]\nname = "X"\n', source: 'cp' } }),
    ThrottleConfigError,
  );
});
