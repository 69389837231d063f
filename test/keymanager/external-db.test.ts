/**
 * The key manager end to end over PostgreSQL and MariaDB/MySQL when reachable (THROUGHWAY_TEST_PG_URL,
 * THROUGHWAY_TEST_MYSQL_URL; skipped with the reason otherwise): keys, a password token, refresh
 * rotation and reuse, revocation and introspection, and a restart that keeps the signing key.
 */
import { eachBackend, mysqlBackend, postgresBackend } from '../store/backends';
import { adminAuth, appWithKeys, basic, json, postForm, startKeyManager } from './helpers';

eachBackend(
  async (t, backend, opened) => {
    const tb = opened.table;
    const database = `[database.apim_db]\ntype = "${tb.type ?? ''}"\nurl = "${tb.url ?? ''}"\nusername = "${tb.username ?? (backend.name === 'postgres' ? 'postgres' : 'root')}"\npassword = "${tb.password ?? ''}"\npool_options.maxActive = "4"\npool_options.maxWait = 5000\n`;
    const h = await startKeyManager('', { database });
    const { key, secret } = await appWithKeys(h);
    await json('POST', `${h.url}/admin/v1/users`, { username: 'alice', password: 'alice-pw-1' }, adminAuth());
    const tok = await postForm(
      `${h.url}/oauth2/token`,
      { grant_type: 'password', username: 'alice', password: 'alice-pw-1' },
      basic(key, secret),
    );
    t.equal(tok.status, 200, tok.text);
    const next = await postForm(
      `${h.url}/oauth2/token`,
      { grant_type: 'refresh_token', refresh_token: String(tok.body.refresh_token) },
      basic(key, secret),
    );
    t.equal(next.status, 200, next.text);
    const replay = await postForm(
      `${h.url}/oauth2/token`,
      { grant_type: 'refresh_token', refresh_token: String(tok.body.refresh_token) },
      basic(key, secret),
    );
    t.match(replay.body, { error: 'invalid_grant' });
    t.same(
      (await postForm(`${h.url}/oauth2/introspect`, { token: String(next.body.access_token) }, basic(key, secret))).body,
      { active: false },
      'revoked with its family',
    );
    const cc = await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(key, secret));
    const kid = h.km.keys.current().kid;
    await h.close();
    const again = await startKeyManager('', { database });
    t.teardown(() => again.close());
    t.equal(again.km.keys.current().kid, kid, 'the signing key is kept in the database');
    t.equal(
      (await postForm(`${again.url}/oauth2/introspect`, { token: String(cc.body.access_token) }, basic(key, secret))).body.active,
      true,
    );
  },
  [postgresBackend, mysqlBackend],
);
