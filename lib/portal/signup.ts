/**
 * Self sign-up, e-mail confirmation and password recovery in the developer portal (docs/self-service.md,
 * "Accounts"). Pages for visitors who are not signed in:
 *
 *   /devportal/signup    a new account of a tenant in the key manager's store (role subscriber), with the
 *                        user name and password rules of every user store ([user_store.properties]); with
 *                        `[multi_tenancy.platform] email_validation_mandatory_for_login` a confirmation link
 *                        is mailed and the account signs in once it is used
 *   /devportal/confirm   the confirmation link: a page whose button confirms (a mail scanner that fetches
 *                        the link confirms nothing)
 *   /devportal/recover   a recovery link mailed to the account's address; the answer is the same whether
 *                        or not an account matches, and is given before any look-up is made
 *   /devportal/reset     the recovery link: a new password, once; the link then is spent
 *
 * Links carry a 256-bit random token; the store keeps only its SHA-256 digest, and using it is a
 * conditional UPDATE (one use, before it expires). Their forms are posted without a session, so they
 * carry a token of their own (AnonymousForms: a random cookie and its HMAC in the form, double-submit;
 * nothing kept on the server). Each client address may post 20 sign-up or recovery forms an hour.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type * as http from 'node:http';
import { OAuthError } from '../keymanager/errors';
import { addressKey } from '../keymanager/listener';
import { digest, randomToken } from '../store/passwords';
import { SUPER_TENANT } from '../store/types';
import { TenantError } from '../tenants';
import { startWorkflow } from '../workflows';
import { type Call, problem, render } from './context';
import { escapeHtml as h, field } from './html';
import type { SelfService } from './selfservice';
import { safeEqual } from './session';

/** The routes under /devportal whose forms are posted without a session. */
export const ANONYMOUS_FORMS: ReadonlySet<string> = new Set(['signup', 'confirm', 'recover', 'reset']);

const ANON_COOKIE = 'tw_form';

/** Double-submit form tokens for visitors without a session: the cookie's random value, and its HMAC under a key of this process in the form. */
export class AnonymousForms {
  private readonly key = randomBytes(32);

  private mac(v: string): string {
    return createHmac('sha256', this.key).update(v).digest('base64url');
  }

  private cookieValue(req: http.IncomingMessage): string | undefined {
    for (const part of (req.headers.cookie ?? '').split(';')) {
      const i = part.indexOf('=');
      if (i > 0 && part.slice(0, i).trim() === ANON_COOKIE) return part.slice(i + 1).trim();
    }
    return undefined;
  }

  /** The hidden field of a form, setting the cookie when the request has none. */
  field(c: Call): string {
    let v = this.cookieValue(c.req);
    if (v === undefined || !/^[A-Za-z0-9_-]{43}$/.test(v)) {
      v = randomToken();
      const secure = (c.req.socket as { encrypted?: boolean }).encrypted === true ? '; Secure' : '';
      c.cookies.push(`${ANON_COOKIE}=${v}; Path=/devportal; HttpOnly; SameSite=Strict${secure}`);
    }
    return `<input type="hidden" name="csrf" value="${h(this.mac(v))}">`;
  }

  ok(req: http.IncomingMessage, form: URLSearchParams): boolean {
    const v = this.cookieValue(req);
    return v !== undefined && safeEqual(form.get('csrf') ?? '', this.mac(v));
  }
}

/** What a sign-up asks for. */
export interface SignUpRequest {
  readonly username: string;
  readonly tenant: string;
  readonly email: string;
  readonly organization: string;
}

/** The sign-up workflow's answer: the account signs in now, or waits for an approver (its task). */
export type SignUpDecision = { readonly state: 'approved' } | { readonly state: 'pending'; readonly reference: string };

/**
 * The one place a sign-up is decided: an AM_USER_SIGNUP workflow with the executor the tenant chose
 * (docs/workflows.md). `simple` (the default) approves at once; `approval` and `external` answer
 * `pending` with the task, and the account is held until it is decided (lib/keymanager/signup-effect.ts).
 */
export async function signUpDecision(s: SelfService, r: SignUpRequest): Promise<SignUpDecision> {
  const organization = r.organization !== '' ? `, organisation ${r.organization}` : '';
  const started = await startWorkflow(s.workflows, 'AM_USER_SIGNUP', r.tenant, r.username, {
    requester: r.username,
    description: `Self sign-up of ${r.username} <${r.email}>${organization}`,
    attributes: { email: r.email, organization: r.organization },
  });
  return started.status === 'approved' ? { state: 'approved' } : { state: 'pending', reference: started.taskId };
}

const EMAIL = /^[^\s@<>()[\]",;:\\]+@[^\s@<>()[\]",;:\\]+\.[^\s@<>()[\]",;:\\]+$/;
/** Longest address: RFC 5321 §4.5.3.1.3's path limit less the angle brackets. */
const MAX_EMAIL = 254;
const MAX_ORGANIZATION = 100;

function need(c: Call): SelfService | undefined {
  return c.parts.selfService;
}

function signUpForm(c: Call, s: SelfService, forms: AnonymousForms, errors: Record<string, string> = {}, status = 200): void {
  const v = (k: string): string => (c.form.get(k) ?? '').slice(0, 300);
  const err = (k: string): { error: string } | Record<string, never> => (errors[k] !== undefined ? { error: errors[k] as string } : {});
  const tenants = s.tenants.list().filter((t) => t.active && t.domain !== SUPER_TENANT);
  const tenantField =
    tenants.length === 0
      ? ''
      : field({
          id: 'tenant',
          label: 'Tenant domain',
          value: v('tenant'),
          hint: "Blank for this deployment's own users",
          ...err('tenant'),
        });
  render(
    c,
    'devportal',
    'Sign up',
    `${errors.form !== undefined ? `<p class="error" role="alert">${h(errors.form)}</p>` : ''}
<form method="post" action="/devportal/signup">${forms.field(c)}
${field({ id: 'username', label: 'User name', value: v('username'), required: true, ...err('username') })}
${tenantField}
${field({ id: 'email', label: 'E-mail address', type: 'email', value: v('email'), required: true, ...err('email') })}
${field({ id: 'organization', label: 'Organisation', value: v('organization'), hint: s.settings.sharing.enabled ? 'Members of one organisation share their applications' : 'Optional', ...err('organization') })}
${field({ id: 'password', label: 'Password', type: 'password', required: true, ...err('password') })}
${field({ id: 'password2', label: 'Password again', type: 'password', required: true, ...err('password2') })}
<button type="submit">Create account</button>
</form>
<p><a href="/devportal/login">Sign in</a> · <a href="/devportal/recover">Forgot your password?</a></p>`,
    status,
  );
}

async function mailLink(s: SelfService, purpose: 'confirm' | 'recover', username: string, email: string, tenant: string): Promise<void> {
  const token = randomToken();
  const validity = purpose === 'confirm' ? s.settings.confirmValidity : s.settings.recoverValidity;
  const now = Date.now();
  await s.store.addLink({ tokenHash: digest(token), purpose, username, expiresAt: now + validity }, now);
  const link = `${s.settings.portalUrl}/${purpose === 'confirm' ? 'confirm' : 'reset'}?token=${token}`;
  const minutes = Math.round(validity / 60_000);
  const text =
    purpose === 'confirm'
      ? `Hello ${username},\n\nconfirm the e-mail address of your developer portal account with this link (valid ${minutes} minutes):\n\n${link}\n\nIf you did not sign up, ignore this mail.`
      : `Hello ${username},\n\nset a new password for your developer portal account with this link (valid ${minutes} minutes, once):\n\n${link}\n\nIf you did not ask for it, ignore this mail: your password stays as it is.`;
  await s.mailer.send({
    kind: purpose,
    to: email,
    subject: purpose === 'confirm' ? 'Confirm your e-mail address' : 'Reset your password',
    text,
    tenant,
  });
}

/**
 * Creates the account of a sign-up: the user, its profile (e-mail, organisation, confirmed unless the
 * address must be confirmed) and the confirmation mail. Under an approval the account exists from here
 * on, held until its task is approved (lib/keymanager/confirmed.ts).
 */
export async function completeSignUp(s: SelfService, r: SignUpRequest, password: string): Promise<{ username: string; confirm: boolean }> {
  const username = await s.addUser(r.username, password);
  const confirm = s.settings.emailValidation;
  const p = await s.store.saveProfile(
    { username, tenant: r.tenant, email: r.email, organization: r.organization, confirmed: !confirm },
    Date.now(),
  );
  if (confirm) await mailLink(s, 'confirm', username, p.email, r.tenant);
  return { username, confirm };
}

/** A sign-up's answer when the account could not be made: the field the store's error is about. */
function refusedFields(err: OAuthError): Record<string, string> {
  return { [/password/i.test(err.message) ? 'password' : 'username']: err.message };
}

async function signUp(c: Call, s: SelfService, forms: AnonymousForms): Promise<void> {
  if (c.method === 'GET') return signUpForm(c, s, forms);
  if (!s.limiter.take(addressKey(c.req.socket.remoteAddress ?? '')))
    return problem(c, 'devportal', 429, 'Too many requests', 'Too many sign-ups from this address: try again in an hour.');
  const f = (k: string): string => (c.form.get(k) ?? '').trim();
  const errors: Record<string, string> = {};
  const own = f('username');
  const domain = f('tenant') === '' ? SUPER_TENANT : f('tenant').toLowerCase();
  const email = f('email');
  const organization = f('organization');
  const password = c.form.get('password') ?? '';
  if (own === '' || own.length > 100) errors.username = 'Give a user name of at most 100 characters.';
  if (s.tenants.get(domain)?.active !== true) errors.tenant = `${domain} is not a tenant of this deployment.`;
  if (email.length > MAX_EMAIL || !EMAIL.test(email)) errors.email = 'Give an e-mail address such as jane@example.org.';
  if (organization.length > MAX_ORGANIZATION || /[\u0000-\u001f\u007f]/.test(organization))
    errors.organization = `At most ${MAX_ORGANIZATION} characters, no control characters.`;
  if (password.length > 1024) errors.password = 'At most 1024 characters.';
  if (password !== (c.form.get('password2') ?? '')) errors.password2 = 'The two passwords differ.';
  if (s.settings.emailValidation && !s.mailer.configured('account'))
    errors.form = 'Sign-up needs e-mail, and no mail server is configured ([output_adapter.email] hostname).';
  if (Object.keys(errors).length > 0) return signUpForm(c, s, forms, errors, 400);
  let username: string;
  try {
    username = s.tenants.qualify(own, domain);
  } catch (err) {
    if (!(err instanceof TenantError)) throw err;
    return signUpForm(c, s, forms, { username: err.message }, 400);
  }
  const request: SignUpRequest = { username, tenant: domain, email, organization };
  // The rules and a free name first: a task is started only for an account that can be made.
  try {
    await s.checkNewUser(username, password);
  } catch (err) {
    if (!(err instanceof OAuthError)) throw err;
    return signUpForm(c, s, forms, refusedFields(err), 400);
  }
  // The task before the account: the account never exists without the task that holds it.
  const decision = await signUpDecision(s, request);
  let done: { username: string; confirm: boolean };
  try {
    done = await completeSignUp(s, request, password);
  } catch (err) {
    // Another sign-up took the name meanwhile: its task is closed without its effect (there is no account of this sign-up).
    if (decision.state === 'pending')
      await s.workflows.withdraw(decision.reference, 'throughway', `the account could not be made: ${(err as Error).message}`);
    if (!(err instanceof OAuthError)) throw err;
    return signUpForm(c, s, forms, refusedFields(err), 400);
  }
  const confirmNote = done.confirm ? ` We sent a confirmation link to ${h(email)}: open it too.` : '';
  if (decision.state === 'pending') {
    c.parts.logger.log('info', 'portal_sign_up_pending', { username: done.username, task: decision.reference, confirm: done.confirm });
    return render(
      c,
      'devportal',
      'Sign-up received',
      `<p class="notice" role="status" id="sign-up-pending">Account <strong>${h(done.username)}</strong> created; it awaits approval. You can sign in once an administrator approves it.${confirmNote}</p>`,
    );
  }
  c.parts.logger.log('info', 'portal_sign_up', { username: done.username, confirm: done.confirm });
  render(
    c,
    'devportal',
    'Account created',
    done.confirm
      ? `<p class="notice" role="status" id="signed-up">Account <strong>${h(done.username)}</strong> created. We sent a confirmation link to ${h(email)}: open it, then <a href="/devportal/login">sign in</a>.</p>`
      : `<p class="notice" role="status" id="signed-up">Account <strong>${h(done.username)}</strong> created. <a href="/devportal/login">Sign in</a>.</p>`,
  );
}

const badLink = (c: Call): void =>
  problem(c, 'devportal', 400, 'Link not valid', 'This link was used already, has expired, or is not one of ours. Ask for a new one.');

const tokenOf = (c: Call): string => {
  const t = (c.method === 'POST' ? c.form.get('token') : c.query.get('token')) ?? '';
  return /^[A-Za-z0-9_-]{20,100}$/.test(t) ? t : '';
};

async function confirm(c: Call, s: SelfService, forms: AnonymousForms): Promise<void> {
  const token = tokenOf(c);
  if (token === '') return badLink(c);
  if (c.method === 'GET') {
    return render(
      c,
      'devportal',
      'Confirm your e-mail address',
      `<form method="post" action="/devportal/confirm">${forms.field(c)}<input type="hidden" name="token" value="${h(token)}"><button type="submit">Confirm my e-mail address</button></form>`,
    );
  }
  const link = await s.store.useLink(digest(token), 'confirm', Date.now());
  if (link === undefined) return badLink(c);
  await s.store.confirmProfile(link.username);
  c.parts.logger.log('info', 'portal_email_confirmed', { username: link.username });
  render(
    c,
    'devportal',
    'E-mail address confirmed',
    `<p class="notice" role="status" id="confirmed">Thank you, ${h(link.username)}: your address is confirmed. <a href="/devportal/login">Sign in</a>.</p>`,
  );
}

/** The same answer for every recovery request (docs/self-service.md): it never says whether an account matched. */
const RECOVERY_SENT =
  '<p class="notice" role="status" id="recovery-sent">If an account matches, a link to set a new password is on its way to the account\'s e-mail address.</p>';

async function recover(c: Call, s: SelfService, forms: AnonymousForms): Promise<void> {
  const form = (): string => `<form method="post" action="/devportal/recover">${forms.field(c)}
${field({ id: 'account', label: 'User name or e-mail address', required: true })}
<button type="submit">Send a recovery link</button></form>`;
  if (c.method === 'GET') return render(c, 'devportal', 'Forgot your password?', form());
  if (!s.limiter.take(addressKey(c.req.socket.remoteAddress ?? '')))
    return problem(c, 'devportal', 429, 'Too many requests', 'Too many requests from this address: try again in an hour.');
  const account = (c.form.get('account') ?? '').trim().slice(0, MAX_EMAIL);
  // Answered before the look-up, so neither the text nor the time says whether an account matched.
  render(c, 'devportal', 'Forgot your password?', RECOVERY_SENT);
  if (account === '') return;
  void (async () => {
    const byName = await s.store.getProfile(account);
    const matches = byName !== undefined ? [byName] : account.includes('@') ? (await s.store.profilesByEmail(account)).slice(0, 5) : [];
    for (const p of matches) {
      await mailLink(s, 'recover', p.username, p.email, p.tenant);
      c.parts.logger.log('info', 'portal_recovery_mailed', { username: p.username });
    }
  })().catch((err: unknown) => c.parts.logger.log('error', 'portal_recovery_failed', { message: (err as Error).message }));
}

async function reset(c: Call, s: SelfService, forms: AnonymousForms): Promise<void> {
  const token = tokenOf(c);
  if (token === '') return badLink(c);
  const page = (error?: string, status = 200): void =>
    render(
      c,
      'devportal',
      'Set a new password',
      `<form method="post" action="/devportal/reset">${forms.field(c)}<input type="hidden" name="token" value="${h(token)}">
${field({ id: 'password', label: 'New password', type: 'password', required: true, ...(error !== undefined ? { error } : {}) })}
${field({ id: 'password2', label: 'New password again', type: 'password', required: true })}
<button type="submit">Set password</button></form>`,
      status,
    );
  if (c.method === 'GET') return page();
  const password = c.form.get('password') ?? '';
  if (password !== (c.form.get('password2') ?? '')) return page('The two passwords differ.', 400);
  // The rules first: a refused password does not spend the link.
  try {
    if (password.length > 1024) throw new OAuthError('invalid_request', 'a password has at most 1024 characters');
    s.checkPassword('', password);
  } catch (err) {
    if (!(err instanceof OAuthError)) throw err;
    return page(err.message, 400);
  }
  const link = await s.store.useLink(digest(token), 'recover', Date.now());
  if (link === undefined) return badLink(c);
  if (!(await s.setPassword(link.username, password))) return badLink(c);
  // The link reached the address: it is confirmed too.
  await s.store.confirmProfile(link.username);
  c.parts.logger.log('info', 'portal_password_reset', { username: link.username });
  render(
    c,
    'devportal',
    'Password changed',
    `<p class="notice" role="status" id="password-changed">Your password is changed. <a href="/devportal/login">Sign in</a>.</p>`,
  );
}

/** The account routes for visitors (`segs` after /devportal); false when the path is none of them. */
export async function accountPage(c: Call, forms: AnonymousForms): Promise<boolean> {
  const s = need(c);
  const [a] = c.segs;
  if (s === undefined || a === undefined || !ANONYMOUS_FORMS.has(a) || c.segs.length !== 1) return false;
  if (c.method !== 'GET' && c.method !== 'POST') return false;
  if (a === 'signup') {
    if (!s.settings.signUp) return false;
    await signUp(c, s, forms);
  } else if (a === 'confirm') await confirm(c, s, forms);
  else if (a === 'recover') await recover(c, s, forms);
  else await reset(c, s, forms);
  return true;
}
