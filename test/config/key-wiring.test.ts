/**
 * Keys the code reads that no other test wrote (test/config/key-status.test.ts lists acting keys no test
 * names): each is written with a value other than its default and seen where it acts: the settings the
 * parts are built from, a listening socket, the key manager's user API.
 */
import t from 'tap';
import { loadConfig } from '../../lib/config/load';
import type { LoadResult } from '../../lib/config/types';
import { throttleSettingsFrom } from '../../lib/throttle/settings';
import { scaleSettingsFrom } from '../../lib/scale/settings';
import { transportSettingsFrom } from '../../lib/gateway/transport-settings';
import { mediationSettingsFrom } from '../../lib/mediation/settings';
import { keyManagerSettings } from '../../lib/keymanager/settings';
import { KEY_CONTENT_TYPES } from '../../lib/mediation/formats';
import { createGateway } from '../../lib/gateway';
import { adminAuth, json, startKeyManager } from '../keymanager/helpers';

function load(text: string): LoadResult {
  const r = loadConfig({ text, file: '/nonexistent/deployment.toml' });
  if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
  return r;
}

t.test('[apim.throttling] condition switches and the decision connection reach the throttle settings', async (t) => {
  const defaults = throttleSettingsFrom(load('').config, '/tmp');
  const flipped = throttleSettingsFrom(
    load(
      `[apim.throttling]\nenable_query_param_based_throttling = ${!defaults.queryConditions}\nenable_jwt_claim_based_throttling = ${!defaults.claimConditions}\nenable_decision_connection = ${!defaults.decisionConnection}\n`,
    ).config,
    '/tmp',
  );
  t.equal(flipped.queryConditions, !defaults.queryConditions);
  t.equal(flipped.claimConditions, !defaults.claimConditions);
  t.equal(flipped.decisionConnection, !defaults.decisionConnection);
});

t.test('[apim.event_hub] event_duplicate_url and event_waiting_time reach the scale settings', async (t) => {
  const s = scaleSettingsFrom(
    load('[apim.event_hub]\nenable = true\nevent_duplicate_url = ["tcp://mq:5672", "redis://127.0.0.1:6390"]\nevent_waiting_time = 250\n')
      .config,
  );
  t.equal(s.redisUrl, 'redis://127.0.0.1:6390', 'the first redis:// URL is the hub');
  t.same(s.ignoredUrls, ['tcp://mq:5672'], 'a JMS URL is named as ignored');
  t.equal(s.eventWaitingTime, 250);
});

t.test('[passthru_http] io_buffer_size sets the backend read buffer only when larger than read_buffer_size', async (t) => {
  const base = transportSettingsFrom(load('').config).readBufferSize ?? 0;
  t.equal(transportSettingsFrom(load(`[passthru_http]\nio_buffer_size = ${base * 4}\n`).config).readBufferSize, base * 4);
  t.equal(
    transportSettingsFrom(load('[passthru_http]\nio_buffer_size = 1024\n').config).readBufferSize,
    base,
    'a smaller one changes nothing (acts differently)',
  );
});

t.test(
  'every [message_builders] and [message_formatters] key, and the custom tables, choose the format of their content type',
  async (t) => {
    const builders = [
      'application_xml',
      'form_urlencoded',
      'multipart_form_data',
      'text_plain',
      'application_json',
      'json_badgerfish',
      'text_javascript',
      'octet_stream',
      'application_binary',
    ];
    const keys = [...builders, 'text_xml', 'soap_xml'];
    t.same([...keys].sort(), Object.keys(KEY_CONTENT_TYPES).sort(), 'every key of the tables');
    const text = [
      '[message_builders]',
      ...builders.map((k) => `${k} = "text"`),
      '[message_formatters]',
      ...keys.map((k) => `${k} = "text"`),
      '[[custom_message_builders]]',
      'content_type = "application/x-orders"',
      'class = "org.apache.synapse.commons.json.JsonStreamBuilder"',
      '[[custom_message_formatters]]',
      'content_type = "application/x-orders"',
      'class = "org.apache.synapse.commons.json.JsonStreamFormatter"',
    ].join('\n');
    const m = mediationSettingsFrom(load(`${text}\n`).config);
    for (const k of builders) t.equal(m.builders.of(KEY_CONTENT_TYPES[k] as string), 'text', `message_builders.${k}`);
    for (const k of keys) t.equal(m.formatters.of(KEY_CONTENT_TYPES[k] as string), 'text', `message_formatters.${k}`);
    t.equal(m.builders.of('application/x-orders'), 'json');
    t.equal(m.formatters.of('application/x-orders; charset=utf-8'), 'json');
    const d = mediationSettingsFrom(load('').config);
    t.equal(d.builders.of('application/json'), 'json', 'the default for comparison');
  },
);

t.test('[oauth.oidc] id_token_validity and [user_store.properties] PasswordHashMethod reach the key manager settings', async (t) => {
  const r = load('[oauth.oidc]\ntoken_validation.id_token_validity = 1200\n[user_store.properties]\nPasswordHashMethod = "MD5"\n');
  const s = keyManagerSettings(r.config, r.ports);
  t.equal(s.idTokenValidity, 1_200_000, 'seconds, loaded as milliseconds');
  t.equal(s.passwordHashMethod, 'MD5');
  t.equal(keyManagerSettings(load('').config, load('').ports).passwordHashMethod, 'SHA-256');
});

t.test('[user_store.properties] PasswordJavaRegEx: the key manager refuses a password that does not match', async (t) => {
  const h = await startKeyManager('[user_store.properties]\nPasswordJavaRegEx = "^.{12,30}$"\n');
  t.teardown(() => h.close());
  const A = `${h.url}/admin/v1`;
  const short = await json('POST', `${A}/users`, { username: 'erin1', password: 'short-pw-1' }, adminAuth());
  t.match(short, { status: 400, body: { error_description: /PasswordJavaRegEx/ } });
  t.equal((await json('POST', `${A}/users`, { username: 'erin1', password: 'a-long-enough-pw-1' }, adminAuth())).status, 201);
});

t.test('[transport.passthru_http] listener.bind-address is the address the gateway listens on', async (t) => {
  const loaded = load('[transport.passthru_http]\nlistener.bind-address = "127.0.0.1"\n');
  const gw = createGateway({ loaded, apis: [] });
  t.teardown(() => gw.close());
  const a = await gw.listen({ port: 0 });
  t.equal(a.address, '127.0.0.1');
});
