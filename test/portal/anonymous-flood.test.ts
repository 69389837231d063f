/**
 * Anonymous requests cannot sign anyone out of the consoles (docs/portal.md, "Security"): a GET of
 * /devportal/login keeps nothing on the server (its PKCE verifier and state travel in the sealed
 * `tw_signin` cookie), so more anonymous sign-in starts than the session bound (MAX_SESSIONS) leave a
 * signed-in user's session working. A forged or stale sign-in cookie is refused at the callback.
 */
import * as http from 'node:http';
import t from 'tap';
import { MAX_SESSIONS } from '../../lib/portal/session';
import { cookieOf, req, signIn, startPortalNode } from './helpers';

/** GET /devportal/login `count` times, `parallel` at a time over keep-alive connections; the 302s. */
async function anonymousLogins(base: string, count: number, parallel: number): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: parallel });
  const url = new URL('/devportal/login', base);
  let next = 0;
  let redirects = 0;
  const one = (): Promise<void> =>
    new Promise((resolve, reject) => {
      http
        .get(url, { agent }, (res) => {
          if (res.statusCode === 302 && /^tw_signin=/.test(res.headers['set-cookie']?.[0] ?? '')) redirects++;
          res.resume();
          res.on('end', resolve);
        })
        .on('error', reject);
    });
  const worker = async (): Promise<void> => {
    while (next < count) {
      next++;
      await one();
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  agent.destroy();
  return redirects;
}

t.test('10,100 anonymous sign-in starts leave a signed-in session working', async (t) => {
  const node = await startPortalNode();
  t.teardown(() => node.close());
  const cookie = await signIn(node.base);
  t.match(cookie, /^tw_portal=/);
  t.equal((await req(`${node.base}/devportal/applications`, cookie)).status, 200, 'signed in');

  // From the user's own address (127.0.0.1), as from behind one NAT: the per-address bound does not save the session.
  const flood = MAX_SESSIONS + 100;
  t.equal(
    await anonymousLogins(node.base, flood, 8),
    flood,
    `${flood} anonymous GET /devportal/login, each answered 302 with a sign-in cookie`,
  );
  const after = await req(`${node.base}/devportal/applications`, cookie);
  t.equal(after.status, 200, 'the signed-in user is still signed in');
  t.match(after.text, /Signed in as <strong>admin<\/strong>/);
});

t.test('the callback refuses a sign-in cookie it did not seal, or none', async (t) => {
  const node = await startPortalNode();
  t.teardown(() => node.close());
  const login = await req(`${node.base}/devportal/login`);
  const pending = cookieOf(login, 'tw_signin');
  const state = new URL(login.location, node.base).searchParams.get('state') ?? '';
  t.match(pending, /^tw_signin=[A-Za-z0-9_-]{40,}$/);
  for (const [name, cookie] of [
    ['no cookie', ''],
    ['a forged cookie', 'tw_signin=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'],
    ['a changed cookie', `${pending.slice(0, -2)}${pending.endsWith('AA') ? 'BB' : 'AA'}`],
  ] as const) {
    const r = await req(`${node.base}/devportal/callback?code=x&state=${encodeURIComponent(state)}`, cookie);
    t.equal(r.status, 400, `${name}: refused`);
    t.match(r.text, /Sign-in expired/);
  }
});
