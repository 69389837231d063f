/**
 * Unknown sections and keys: a warning naming the closest known one, an error under --strict (docs/configuration.md).
 */
import t from 'tap';
import { brief, errors, load, warnings } from './helpers';
import type { SectionDef } from '../../lib/config/schema-types';

t.test('an unknown key names the closest key of its section', async (t) => {
  const r = load('[apim.cors]\nallow_method = "GET"\n');
  t.ok(r.ok, 'a warning does not fail the load');
  t.match(warnings(r), [{ level: 'warning', code: 'CONFIG_UNKNOWN_KEY', key: 'apim.cors.allow_method', line: 2, column: 1 }]);
  t.equal(warnings(r)[0]?.message, "unknown key 'allow_method' in [apim.cors]; did you mean 'allow_methods'?");
});

t.test('a key in a different case finds its spelling', async (t) => {
  const r = load('[server]\nHostName = "localhost"\n');
  t.match(warnings(r)[0]?.message, "did you mean 'hostname'?");
});

t.test('dotted keys are suggested whole', async (t) => {
  const r = load('[database.apim_db]\ntype = "h2"\nusername = "a"\npassword = "b"\npool_options.maxActiv = "10"\n');
  t.match(warnings(r), [{ key: 'database.apim_db.pool_options.maxActiv', line: 5 }]);
  t.match(warnings(r)[0]?.message, "did you mean 'pool_options.maxActive'?");
});

t.test('an unknown section names the closest known section', async (t) => {
  const r = load('[apim.notification]\nfrom_address = "a@b.c"\n');
  t.match(warnings(r), [{ code: 'CONFIG_UNKNOWN_SECTION', key: 'apim.notification', line: 1 }]);
  t.equal(warnings(r)[0]?.message, 'unknown section [apim.notification]; did you mean [apim.notifications]?');
  const top = load('[sever]\nhostname = "x"\n');
  t.match(warnings(top)[0]?.message, 'did you mean [server]?');
});

t.test('nothing is suggested when nothing is close', async (t) => {
  const r = load('[apim.cors]\nzebra_crossing = 1\n');
  t.equal(warnings(r)[0]?.message, "unknown key 'zebra_crossing' in [apim.cors]");
});

t.test('--strict turns unknown sections and keys into errors', async (t) => {
  const text = '[apim.cors]\nallow_method = "GET"\n[apim.notification]\nfrom_address = "a@b.c"\n';
  const r = load(text, { strict: true });
  t.notOk(r.ok);
  t.match(errors(r), [
    { level: 'error', code: 'CONFIG_UNKNOWN_KEY', line: 2 },
    { level: 'error', code: 'CONFIG_UNKNOWN_SECTION', line: 3 },
  ]);
  t.same(warnings(r), []);
});

t.test('the [throughway] section is known to --strict', async (t) => {
  const r = load('[throughway]\nlog_level = "debug"\n[throughway.demo]\nenable = true\nport = 9000\n', { strict: true });
  t.same(brief(r), []);
});

t.test('inactive features are accepted and listed', async (t) => {
  const r = load(
    '[apim.devportal]\napplication_sharing_impl = "org.example.Sharing"\n[indexing]\nenable = false\n[server]\nmode = "ha"\n',
    {
      strict: true,
    },
  );
  t.same(brief(r), []);
  t.same(r.inactive, ['indexing']);
  // [apim.devportal] runs (the developer portal acts on most of its keys: docs/portal.md); application_sharing_impl does not.
  t.same([...r.inactiveKeys].sort(), ['apim.devportal.application_sharing_impl', 'server.mode']);
});

t.test('required keys of a written table that runs are enforced; of an inactive one, not', async (t) => {
  const builder = load('[[custom_message_builders]]\n');
  t.same(
    errors(builder)
      .map((d) => `${d.code} ${d.key} @${d.line}`)
      .sort(),
    ['CONFIG_REQUIRED custom_message_builders[0].class @1', 'CONFIG_REQUIRED custom_message_builders[0].content_type @1'],
  );
  // The event hub's publishing URLs are not acted on (the hub is a redis:// URL, docs/scale-out.md): not enforced.
  t.same(errors(load('[apim.event_hub]\nenable = true\n[[apim.event_hub.publish.url_group]]\n')), []);
  // Nothing acts on the gateway environments (docs/migrating.md): their R keys are not enforced.
  t.same(errors(load('[[apim.gateway.environment]]\nname = "Edge"\n')), []);
  const off = load('[security_audit]\nglobal = true\n');
  t.same(errors(off), [], "[security_audit] runs locally; the hosted service's api_token is not acted on, so not required");
  const absent = load('');
  t.same(errors(absent), [], 'a table that is not written is satisfied by its defaults');
});

t.test('required keys wait for the feature switch', async (t) => {
  const off = load('[apim.analytics]\nenable = false\n');
  t.same(errors(off), []);
  t.same(errors(load('[apim.event_hub]\nenable = false\n[[apim.event_hub.publish.url_group]]\n')), [], 'switched off: nothing required');
  // Switched on, the group's R keys are still not enforced: nothing acts on them (lib/config/key-status.ts).
  const on = load('[apim.event_hub]\nenable = true\n[[apim.event_hub.publish.url_group]]\n');
  t.same(errors(on), []);
  // The switch itself, on a table whose required key acts.
  const sections: readonly SectionDef[] = [
    {
      path: 'feature',
      source: '000',
      title: 'A feature behind a switch',
      runs: true,
      enabledBy: 'feature.enable',
      keys: [
        { key: 'enable', type: 'b', default: false, meaning: 'Switch.' },
        { key: 'url', type: 's', required: true, meaning: 'Needed once on.' },
      ],
    },
  ];
  t.same(errors(load('[feature]\nenable = false\n', { sections })), [], 'off: nothing required');
  t.same(
    errors(load('[feature]\nenable = true\n', { sections })).map((d) => `${d.code} ${d.key}`),
    ['CONFIG_REQUIRED feature.url'],
    'on: the key is required',
  );
  // The WSS trust store is R with a default (the server trust store): switching WSS on requires nothing.
  t.same(errors(load('[transport.wss]\nsender.enable = true\n')), []);
});
