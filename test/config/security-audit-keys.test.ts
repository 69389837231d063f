/**
 * `[security_audit]` in the configuration (docs/security-audit.md): the table written, even empty, is in
 * LoadResult.tables (what turns the publisher's local audit on), and not when it is not written; the
 * hosted service's keys are "not acted on" with the reason, `global` acts differently, and the api_token
 * is a secret that `config print` and the diagnostics never show.
 */
import t from 'tap';
import { loadConfig } from '../../lib/config/load';
import { printConfig } from '../../lib/config/print';

const TOKEN = 'token-of-the-hosted-audit-service-1234';

t.test('the table written, even empty, is in tables; not written, it is not', async (t) => {
  t.ok(loadConfig({ text: '[security_audit]\n', env: {} }).tables.has('security_audit'), 'an empty table');
  t.ok(loadConfig({ text: 'security_audit.global = true\n', env: {} }).tables.has('security_audit'), 'a dotted key');
  const absent = loadConfig({ text: '[server]\nhostname = "localhost"\n', env: {} });
  t.notOk(absent.tables.has('security_audit'));
  t.equal(absent.config.security_audit.global, true, 'global defaults to true: the table itself is the switch');
});

t.test("the hosted service's keys are not acted on, with the reason; global acts", async (t) => {
  const r = loadConfig({
    text: `[security_audit]\napi_token = "${TOKEN}"\ncollection_id = "c-1"\nbase_url = "https://audit.example.com/api/v1/apis"\nglobal = false\n`,
    env: {},
  });
  t.equal(r.ok, true);
  t.same(
    r.notActedOn.map((k) => [k.key, k.reason]),
    ['api_token', 'collection_id', 'base_url'].map((k) => [
      `security_audit.${k}`,
      'the external audit service is not called; the audit runs locally, in the publisher (docs/security-audit.md)',
    ]),
  );
  t.notOk(r.inactive.includes('security_audit'), 'the section runs');
  t.equal(r.config.security_audit.global, false);
  t.ok(r.secrets.includes('security_audit.api_token'));
  t.notMatch(JSON.stringify(r.diagnostics), new RegExp(TOKEN));
  t.notMatch(printConfig(r), new RegExp(TOKEN), 'config print masks it');
});
