/**
 * The consoles over plain HTTP (no browser): sign-in through the key manager's code flow, the session
 * cookie's attributes on HTTP and HTTPS, a new session id at sign-in, the CSRF check (403), the
 * publisher refused to a user without the publisher or creator role, sign-in returning only to a page
 * of the consoles, and what a page escapes.
 */
import * as https from 'node:https';
import t from 'tap';
import { ADMIN, startPortalNode } from './helpers';

interface Answer {
  status: number;
  location: string;
  cookies: string[];
  text: string;
}

async function get(url: string, cookie = '', method = 'GET', form?: Record<string, string>): Promise<Answer> {
  const r = await fetch(url, {
    method,
    redirect: 'manual',
    headers: {
      ...(cookie !== '' ? { Cookie: cookie } : {}),
      ...(form !== undefined ? { 'Content-Type': 'application/x-www-form-urlencoded' } : {}),
    },
    ...(form !== undefined ? { body: new URLSearchParams(form).toString() } : {}),
  });
  return { status: r.status, location: r.headers.get('location') ?? '', cookies: r.headers.getSetCookie(), text: await r.text() };
}

const cookieOf = (a: Answer, name: string): string =>
  a.cookies.map((c) => c.split(';')[0] as string).find((c) => c.startsWith(`${name}=`)) ?? '';
const hidden = (html: string, name: string): string => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? '';

/** Signs in through /devportal/login and the key manager's page; returns the session cookie and the login's Set-Cookie. */
async function signIn(
  base: string,
  user: string,
  password: string,
  back = '/devportal',
): Promise<{ cookie: string; before: string; landed: string; setCookie: string }> {
  const login = await get(`${base}/devportal/login?back=${encodeURIComponent(back)}`);
  const before = cookieOf(login, 'tw_portal');
  const pending = cookieOf(login, 'tw_signin');
  const page = await get(`${base}${login.location}`);
  const authz = cookieOf(page, 'tw_authz');
  const posted = await get(`${base}/oauth2/authorize`, authz, 'POST', {
    authz: hidden(page.text, 'authz'),
    csrf: hidden(page.text, 'csrf'),
    username: user,
    password,
    action: 'login',
  });
  const cb = await get(posted.location, pending);
  return {
    cookie: cookieOf(cb, 'tw_portal'),
    before,
    landed: cb.location,
    setCookie: cb.cookies.find((c) => c.startsWith('tw_portal=')) ?? '',
  };
}

t.test('sign-in, session cookie, CSRF, roles', async (t) => {
  const node = await startPortalNode();
  t.teardown(() => node.close());
  const base = node.base;

  const anon = await get(`${base}/devportal/applications`);
  t.equal(anon.status, 303, 'an anonymous visitor is sent to sign in');
  t.equal(anon.location, '/devportal/login?back=%2Fdevportal%2Fapplications');
  t.equal((await get(`${base}/devportal/applications`, '', 'POST', { name: 'X' })).status, 403, 'a POST without a session is refused');

  const s = await signIn(base, ADMIN.username, ADMIN.password, '/devportal/applications');
  t.equal(s.landed, '/devportal/applications', 'back where the sign-in started');
  t.match(s.setCookie, /^tw_portal=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax$/, 'HttpOnly, SameSite=Lax, no Secure on HTTP');
  t.equal(s.before, '', 'no session before the sign-in: /devportal/login sets none (its state is in the sealed tw_signin cookie)');
  t.match(s.setCookie, /^tw_portal=/, 'the session begins at the callback');

  const apps = await get(`${base}/devportal/applications`, s.cookie);
  t.equal(apps.status, 200);
  t.match(apps.text, /Signed in as <strong>admin<\/strong>/);
  const csrf = hidden(apps.text, 'csrf');
  t.match(csrf, /^[A-Za-z0-9_-]{43}$/);
  t.equal((await get(`${base}/devportal/applications`, s.cookie, 'POST', { name: 'NoToken' })).status, 403, 'no CSRF token: 403');
  t.equal(
    (
      await get(`${base}/devportal/applications`, s.cookie, 'POST', {
        name: 'Wrong',
        csrf: csrf.replace(/^./, (c) => (c === 'A' ? 'B' : 'A')),
      })
    ).status,
    403,
    'a wrong CSRF token: 403',
  );
  const made = await get(`${base}/devportal/applications`, s.cookie, 'POST', { name: '<script>alert(1)</script>', csrf });
  t.equal(made.status, 303, 'with the token: created');
  const shown = await get(`${base}${made.location}`, s.cookie);
  t.notMatch(shown.text, /<script>alert/, 'a name is escaped');
  t.match(shown.text, /&#60;script&#62;alert\(1\)&#60;\/script&#62;/);
  t.equal(
    (await node.node.keyManager?.manager.listApplications('admin'))?.filter((a) => a.name === 'NoToken' || a.name === 'Wrong').length,
    0,
    'nothing made without the token',
  );
  t.equal((await get(`${base}/publisher`, s.cookie)).status, 200, 'the admin may publish');

  // Edit: the tier from the application policies, published as application.changed.
  const changed: string[] = [];
  t.teardown(
    node.node.events.subscribe((e) => {
      if (e.name === 'application.changed') changed.push(e.payload.application.tier);
    }),
  );
  t.match(shown.text, /<option value="20PerMin">20PerMin<\/option>/, 'application tiers offered');
  const edited = await get(`${base}${made.location}/edit`, s.cookie, 'POST', { csrf, tier: '20PerMin', description: 'edited' });
  t.equal(edited.status, 303);
  const after = (await node.node.keyManager?.manager.listApplications('admin'))?.find((a) => a.name.startsWith('<script>'));
  t.equal(after?.tier, '20PerMin');
  t.equal(after?.description, 'edited');
  t.same(changed, ['20PerMin'], 'gateways hear of the new tier');
  t.equal(
    (await get(`${base}${made.location}/edit`, s.cookie, 'POST', { csrf, tier: 'NoSuchTier' })).status,
    400,
    'a tier outside the policies is refused',
  );

  // A subscriber: the portal yes, the publisher no.
  await node.node.keyManager?.manager.addUser({ username: 'dev1', password: 'dev1-password', roles: ['subscriber'] });
  const dev = await signIn(base, 'dev1', 'dev1-password');
  t.equal((await get(`${base}/devportal/applications`, dev.cookie)).status, 200);
  const refused = await get(`${base}/publisher`, dev.cookie);
  t.equal(refused.status, 403, 'a subscriber may not publish');
  t.match(refused.text, /needs the publisher or creator role/);
  t.notMatch((await get(`${base}/devportal/applications`, dev.cookie)).text, /alert/, "another user's applications are not listed");
  const adminApp = (await node.node.keyManager?.manager.listApplications('admin'))?.find((a) => a.name.startsWith('<script>'));
  t.equal((await get(`${base}/devportal/applications/${adminApp?.id ?? ''}`, dev.cookie)).status, 404, 'nor reachable by id');

  // Sign-in returns only to the consoles; a callback with another state is refused.
  const away = await signIn(base, ADMIN.username, ADMIN.password, 'https://evil.example/');
  t.equal(away.landed, '/devportal', 'an outside "back" is ignored');
  const login = await get(`${base}/devportal/login`);
  const bad = await get(`${base}/devportal/callback?code=abc&state=not-the-state`, cookieOf(login, 'tw_signin'));
  t.equal(bad.status, 400, 'wrong state: refused');
  t.match(bad.text, /Sign-in expired/);

  // Sign-out ends the session.
  const out = await get(`${base}/devportal/logout`, s.cookie, 'POST', { csrf });
  t.equal(out.status, 303);
  t.equal((await get(`${base}/devportal/applications`, s.cookie)).status, 303, 'signed out');
});

t.test('on the management HTTPS port the sign-in cookie is Secure', async (t) => {
  const node = await startPortalNode();
  t.teardown(() => node.close());
  const port = node.node.keyManager?.addresses().https?.port;
  t.ok(port, 'management HTTPS listens');
  const r = await new Promise<{ status: number; cookie: string; location: string }>((resolve, reject) => {
    https
      .get(
        { host: '127.0.0.1', port, path: '/devportal/login', rejectUnauthorized: false, headers: { Host: `127.0.0.1:${port ?? 0}` } },
        (res) => {
          res.resume();
          resolve({
            status: res.statusCode ?? 0,
            cookie: (res.headers['set-cookie'] ?? []).join('\n'),
            location: res.headers.location ?? '',
          });
        },
      )
      .on('error', reject);
  });
  t.equal(r.status, 302);
  t.match(
    r.cookie,
    /^tw_signin=[A-Za-z0-9_-]+; Path=\/devportal\/callback; HttpOnly; SameSite=Lax; Max-Age=600; Secure$/,
    'Secure on HTTPS, sent to the callback only',
  );
  t.match(
    r.location,
    /^\/oauth2\/authorize\?.*redirect_uri=https%3A%2F%2F127\.0\.0\.1%3A\d+%2Fdevportal%2Fcallback/,
    'the HTTPS client and callback',
  );
  t.match(r.location, /code_challenge_method=S256/, 'PKCE S256');
});

t.test('the catalogue shows the configured gateway environments that ask to be shown', async (t) => {
  const { PORTAL_TOML } = await import('./helpers');
  const node = await startPortalNode(
    `${PORTAL_TOML}[[apim.gateway.environment]]\nname = "Edge"\nhttp_endpoint = "http://gw.example:8280"\nhttps_endpoint = "https://gw.example:8243"\n[[apim.gateway.environment]]\nname = "Hidden"\ndisplay_in_api_console = false\nhttp_endpoint = "http://hidden.example:8280"\n`,
  );
  t.teardown(() => node.close());
  const page = await get(`${node.base}/devportal/apis/demo.toml`);
  t.equal(page.status, 200);
  t.match(page.text, /Edge \(HTTP\): <code>http:\/\/gw\.example:8280\/pizzashack\/1\.0\.0<\/code>/);
  t.match(page.text, /Edge \(HTTPS\): <code>https:\/\/gw\.example:8243\/pizzashack\/1\.0\.0<\/code>/);
  t.notMatch(page.text, /hidden\.example/, 'display_in_api_console = false is not shown');
});
