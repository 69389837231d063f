/**
 * Helpers of the self-service tests: a portal node whose mail goes to a test SMTP server, sign-up through
 * the developer portal's form, and a sign-in as any user through the key manager's page.
 */
import { ADMIN, cookieOf, hidden, PORTAL_TOML, req, startPortalNode, type Answer, type PortalNode } from './helpers';

export { ADMIN };

/** PORTAL_TOML with mail to 127.0.0.1:`smtpPort` and the given extra tables. */
export function selfServiceToml(smtpPort: number, extra = ''): string {
  return `${PORTAL_TOML}[output_adapter.email]\nhostname = "127.0.0.1"\nport = ${smtpPort}\nfrom_address = "portal@example.org"\n[apim.notifications]\nhostname = "127.0.0.1"\nport = ${smtpPort}\nfrom_address = "news@example.org"\nsignature = "The API team"\n${extra}`;
}

export function startSelfServiceNode(smtpPort: number, extra = '', files: Record<string, string> = {}): Promise<PortalNode> {
  return startPortalNode(selfServiceToml(smtpPort, extra), files);
}

/** Posts the sign-up form as a visitor (its double-submit cookie and token first). */
export async function signUp(
  base: string,
  fields: { username: string; password: string; email: string; organization?: string; tenant?: string },
): Promise<Answer> {
  const form = await req(`${base}/devportal/signup`);
  const cookie = cookieOf(form, 'tw_form');
  return req(`${base}/devportal/signup`, cookie, {
    csrf: hidden(form.text, 'csrf'),
    username: fields.username,
    password: fields.password,
    password2: fields.password,
    email: fields.email,
    organization: fields.organization ?? '',
    tenant: fields.tenant ?? '',
  });
}

/** Follows a mailed link's page and posts its form (confirm, reset); the answer of the post. */
export async function postLink(link: string, fields: Record<string, string> = {}): Promise<Answer> {
  const page = await req(link);
  const u = new URL(link);
  return req(`${u.origin}${u.pathname}`, cookieOf(page, 'tw_form'), {
    csrf: hidden(page.text, 'csrf'),
    token: hidden(page.text, 'token'),
    ...fields,
  });
}

/** Signs a user in through the key manager's page: the portal session cookie, or the refused page's status. */
export async function signInAs(base: string, username: string, password: string): Promise<{ cookie: string; status: number }> {
  const login = await req(`${base}/devportal/login?back=%2Fdevportal`);
  const page = await req(`${base}${login.location}`);
  const posted = await req(`${base}/oauth2/authorize`, cookieOf(page, 'tw_authz'), {
    authz: hidden(page.text, 'authz'),
    csrf: hidden(page.text, 'csrf'),
    username,
    password,
    action: 'login',
  });
  if (posted.status !== 302) return { cookie: '', status: posted.status };
  const cb = await req(posted.location, cookieOf(login, 'tw_signin'));
  return { cookie: cookieOf(cb, 'tw_portal'), status: cb.status };
}
