/**
 * `npm start` on the shipped conf/ (a copy at a free offset): the start-up lines print the developer
 * portal's and the publisher's URLs, and the demo's admin (admin / admin) signs in to both through the
 * key manager's page, reached at the printed host name (the request goes to 127.0.0.1 with that Host).
 */
import * as http from 'node:http';
import t from 'tap';
import { startConfCopy } from '../conf-node';

interface Answer {
  status: number;
  location: string;
  cookies: string[];
  text: string;
}

/** A request to 127.0.0.1:port with the Host the printed URL names (the listener is on loopback). */
function call(port: number, host: string, path: string, cookie = '', form?: Record<string, string>): Promise<Answer> {
  const body = form !== undefined ? new URLSearchParams(form).toString() : undefined;
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: body !== undefined ? 'POST' : 'GET',
        headers: {
          Host: host,
          ...(cookie !== '' ? { Cookie: cookie } : {}),
          ...(body !== undefined ? { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': Buffer.byteLength(body) } : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, location: res.headers.location ?? '', cookies: res.headers['set-cookie'] ?? [], text }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const cookieOf = (a: Answer, name: string): string =>
  a.cookies.map((c) => c.split(';')[0] as string).find((c) => c.startsWith(`${name}=`)) ?? '';
const hidden = (html: string, name: string): string => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? '';

t.test('npm start prints both consoles; the demo admin signs in to both', async (t) => {
  const node = await startConfCopy(t, 'tw-portal-start-');
  const until = Date.now() + 60_000;
  while (!/^Try:/m.test(node.out) && Date.now() < until && node.child.exitCode === null) await new Promise((r) => setTimeout(r, 100));
  const m = /developer portal\s+https:\/\/localhost:(\d+)\/devportal \(also http:\/\/localhost:(\d+)\/devportal\)/.exec(node.out);
  t.ok(m, `the portal's URLs are printed:\n${node.out}\n${node.err}`);
  t.match(node.out, /publisher\s+https:\/\/localhost:\d+\/publisher \(also http:\/\/localhost:\d+\/publisher\)/, "and the publisher's");
  const port = Number(m?.[2] ?? 0);
  const host = `localhost:${port}`;
  for (const back of ['/devportal/applications', '/publisher']) {
    const login = await call(port, host, `/devportal/login?back=${encodeURIComponent(back)}`);
    t.equal(login.status, 302, `${back}: to the key manager`);
    const page = await call(port, host, login.location);
    t.match(page.text, /Sign in/);
    const posted = await call(port, host, '/oauth2/authorize', cookieOf(page, 'tw_authz'), {
      authz: hidden(page.text, 'authz'),
      csrf: hidden(page.text, 'csrf'),
      username: 'admin',
      password: 'admin',
      action: 'login',
    });
    t.match(posted.location, new RegExp(`^http://localhost:${port}/devportal/callback\\?code=`), 'a code, no consent page');
    const cb = await call(port, host, new URL(posted.location).pathname + new URL(posted.location).search, cookieOf(login, 'tw_signin'));
    t.equal(cb.location, back);
    const landed = await call(port, host, back, cookieOf(cb, 'tw_portal'));
    t.equal(landed.status, 200, `${back} as admin`);
    t.match(landed.text, /Signed in as <strong>admin<\/strong>/);
  }
});
