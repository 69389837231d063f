/**
 * The developer portal (/devportal) and the publisher (/publisher): the reference's two web consoles,
 * server-rendered by the management server on its HTTP and HTTPS ports (docs/portal.md). createPortal
 * returns the routes the key manager mounts (KeyManager.mount) and the first-party clients to register.
 *
 * Requests: GET pages; every POST is an application/x-www-form-urlencoded form of at most 64 KiB (1 MiB
 * for the publisher's forms that carry .proto files, in a session, which may also be multipart/form-data
 * with their file inputs) carrying the session's CSRF token (403 without it). Anonymous visitors may browse the catalogue;
 * everything else needs a sign-in through the key manager's authorization code flow (signin.ts), and
 * the publisher needs a publisher, creator or admin role.
 */
import type * as http from 'node:http';
import type { SiteHandler } from '../keymanager';
import { OAuthError } from '../keymanager/errors';
import { MAX_PROTO_UPLOAD_BODY, readBody } from '../keymanager/http';
import { PortalRemoteError } from './backend';
import { boundaryOf, type FormFile, parseMultipart } from './multipart';
import { SUPER_TENANT } from '../tenants';
import { type Call, canPublish, type PortalOptions, type PortalParts, problem } from './context';

export type { DevportalSettings, PortalOptions } from './context';
import { publicPage, signedIn } from './devportal';
import { ICON_PATH, seeOther, sendIcon, sendStyle, STYLE_PATH } from './html';
import { publisher } from './publisher';
import { admin, canAdminister } from './admin';
import { anonymousSession, csrfOk, safeEqual, sessionCookie, Sessions, SignInSeal, signInCookie } from './session';
import { CALLBACK_PATH, SignIn } from './signin';
import { accountPage, ANONYMOUS_FORMS, AnonymousForms } from './signup';

export interface Portal {
  /** The routes, for KeyManager.mount. */
  readonly handler: SiteHandler;
  readonly sessions: Sessions;
  /** Registers the consoles' OAuth clients for the origins browsers use; returns their consumer keys. */
  register(origins: { readonly http: string | undefined; readonly https: string | undefined }): Promise<ReadonlySet<string>>;
}

/** The call with its signed-in user's tenant's key manager (PortalKeyManager.forTenant), unless that is the super tenant. */
function withTenantKeys(c: Call): Call {
  const u = c.session.user;
  const keys = c.parts.keys;
  if (u === undefined || keys.forTenant === undefined || c.parts.tenants === undefined) return c;
  const tenant = c.parts.tenants.tenantOf(u.username);
  return tenant === SUPER_TENANT ? c : { ...c, parts: { ...c.parts, keys: keys.forTenant(tenant) } };
}

/**
 * Where a sign-in may return to: a page of the consoles, never another site nor another path of this
 * origin (docs/portal.md, "Sign-in"). The value is resolved as a browser resolves a Location (WHATWG URL:
 * dot segments, `%2e` among them, removed), and refused unless it stays on this origin and its path is
 * /devportal, /publisher or /admin or below them (not the JSON API under /admin/v1); a backslash (which browsers read as `/`), an encoded slash or
 * backslash, a doubled slash, a query or fragment, or more than 2 KiB is refused. Refused: /devportal.
 */
export function safeBack(v: string | null): string {
  const fallback = '/devportal';
  if (v === null || v.length > 2048 || !v.startsWith('/') || /[\\\s]|%(2f|5c|00)|\/\/|[?#]/i.test(v)) return fallback;
  let u: URL;
  try {
    u = new URL(v, 'http://consoles.invalid');
  } catch {
    return fallback;
  }
  if (
    u.origin !== 'http://consoles.invalid' ||
    !/^\/(devportal|publisher|admin)(\/[A-Za-z0-9._~%:/-]*)?$/.test(u.pathname) ||
    u.pathname.includes('//')
  )
    return fallback;
  // /admin/v1 is the JSON admin API, never a page to return to.
  if (/^\/admin\/v1(\/|$)/.test(u.pathname)) return fallback;
  return u.pathname;
}

function consoleOf(p: string): 'devportal' | 'publisher' | 'admin' | undefined {
  if (p === '/devportal' || p.startsWith('/devportal/')) return 'devportal';
  if (p === '/publisher' || p.startsWith('/publisher/')) return 'publisher';
  // /admin/v1 is the JSON admin API (lib/keymanager/admin.ts), never a page.
  if (p === '/admin' || (p.startsWith('/admin/') && p !== '/admin/v1' && !p.startsWith('/admin/v1/'))) return 'admin';
  return undefined;
}

const secureReq = (req: http.IncomingMessage): boolean => (req.socket as { encrypted?: boolean }).encrypted === true;

export function createPortal(o: PortalOptions): Portal {
  const sessions = new Sessions();
  const seal = new SignInSeal();
  const signin = new SignIn(o.keys);
  const parts: PortalParts = {
    keys: o.keys,
    catalogue: o.catalogue,
    logger: o.logger,
    sessions,
    signin,
    settings: o.settings,
    tiers: o.tiers,
    applicationTiers: o.applicationTiers,
    ...(o.policyNames !== undefined ? { policyNames: o.policyNames } : {}),
    gateways: o.gateways,
    consoles: o.consoles,
    ...(o.selfService !== undefined ? { selfService: o.selfService } : {}),
    ...(o.admin !== undefined ? { admin: o.admin } : {}),
    ...(o.tenants !== undefined ? { tenants: o.tenants } : {}),
    ...(o.audit !== undefined ? { audit: o.audit } : {}),
  };
  const anonymousForms = new AnonymousForms();

  const login = async (c: Call): Promise<void> => {
    const client = signin.clientFor(secureReq(c.req));
    if (client === undefined)
      return problem(c, 'devportal', 503, 'Sign-in unavailable', 'The consoles are not registered with the key manager yet.');
    const back = safeBack(c.query.get('back'));
    // The callback returns to the registered origin: start there, so the session cookie is on that host.
    const host = c.req.headers.host ?? '';
    if (host !== new URL(client.origin).host) return seeOther(c.res, `${client.origin}/devportal/login?back=${encodeURIComponent(back)}`);
    // Nothing is kept on the server before sign-in: the pending sign-in rides in a sealed cookie.
    const b = await signin.begin(client);
    c.cookies.push(signInCookie(c.req, seal.seal({ state: b.state, verifier: b.verifier, back })));
    c.res.writeHead(302, { Location: b.location, 'Content-Length': 0, 'Cache-Control': 'no-store', 'Set-Cookie': c.cookies });
    c.res.end();
  };

  const callback = async (c: Call): Promise<void> => {
    const pending = seal.open(c.req);
    const clear = signInCookie(c.req, undefined);
    const error = c.query.get('error');
    if (error !== null)
      return problem(
        { ...c, cookies: [clear] },
        'devportal',
        400,
        'Sign-in failed',
        `${error}: ${(c.query.get('error_description') ?? '').slice(0, 300)}`,
      );
    if (pending === undefined || !safeEqual(c.query.get('state') ?? '', pending.state)) {
      return problem({ ...c, cookies: [clear] }, 'devportal', 400, 'Sign-in expired', 'This sign-in is unknown or expired; sign in again.');
    }
    const client = signin.clientFor(secureReq(c.req));
    if (client === undefined)
      return problem(c, 'devportal', 503, 'Sign-in unavailable', 'The consoles are not registered with the key manager.');
    let user;
    try {
      user = await signin.finish(client, c.query.get('code') ?? '', pending.verifier);
    } catch (err) {
      if (err instanceof OAuthError) return problem({ ...c, cookies: [clear] }, 'devportal', 400, 'Sign-in failed', err.message);
      throw err;
    }
    // A new session at sign-in (session fixation): a session the browser held before ends.
    const before = sessions.find(c.req);
    if (before !== undefined) sessions.drop(before);
    const s = sessions.create(user, c.req.socket.remoteAddress ?? '');
    o.logger.log('info', 'portal_sign_in', { username: user.username });
    seeOther(c.res, pending.back, { 'Set-Cookie': [sessionCookie(c.req, s), clear] });
  };

  const route = async (c0: Call, which: 'devportal' | 'publisher' | 'admin'): Promise<void> => {
    // A tenant's signed-in user reaches the key manager within its own tenant (a remote one: backend.ts forTenant).
    const c = withTenantKeys(c0);
    const first = c.segs[0];
    if (which === 'devportal' && first === 'login' && c.method === 'GET') return login(c);
    if (which === 'devportal' && first === 'callback' && c.method === 'GET') return callback(c);
    if (first === 'logout' && c.method === 'POST') {
      if (c.session.user !== undefined) sessions.drop(c.session);
      return seeOther(c.res, '/devportal', { 'Set-Cookie': sessionCookie(c.req, undefined) });
    }
    if (which === 'devportal' && o.consoles.devportal && (await publicPage(c))) return;
    if (which === 'devportal' && o.consoles.devportal && (await accountPage(c, anonymousForms))) return;
    if (c.session.user === undefined) {
      if (c.method === 'GET')
        return seeOther(
          c.res,
          `/devportal/login?back=${encodeURIComponent(`/${which}${c.segs.length > 0 ? `/${c.segs.map(encodeURIComponent).join('/')}` : ''}`)}`,
        );
      return problem(c, which, 401, 'Sign in first', 'Your session has ended: sign in again.');
    }
    if (which === 'devportal') return signedIn(c);
    if (which === 'admin') {
      if (o.admin === undefined) return problem(c, which, 404, 'Not found', 'This node serves no admin console.');
      if (!canAdminister(c))
        return problem(
          c,
          which,
          403,
          'Not allowed',
          `The admin console needs the admin role; ${c.session.user.username} has ${c.session.user.roles.join(', ') || 'none'}.`,
        );
      return admin(c, o.admin);
    }
    if (!canPublish(c.session))
      return problem(
        c,
        which,
        403,
        'Not allowed',
        `The publisher needs the publisher or creator role; ${c.session.user.username} has ${c.session.user.roles.join(', ') || 'none'}.`,
      );
    return publisher(c);
  };

  const handler: SiteHandler = async (req, res, p, url) => {
    if (p === STYLE_PATH) {
      sendStyle(res);
      return true;
    }
    if (p === ICON_PATH) {
      sendIcon(res);
      return true;
    }
    const which = consoleOf(p);
    if (which === undefined) return false;
    // The sign-in routes live under /devportal even on a publisher-only node, whose /devportal leads to /publisher.
    const signinRoute = p === '/devportal/login' || p === CALLBACK_PATH || p === '/devportal/logout';
    // /admin is served where this node has the admin console's parts (its own key manager), else not at all.
    if (which === 'admin' && o.admin === undefined) return false;
    if (!signinRoute && which !== 'admin' && !o.consoles[which]) {
      if (p !== '/devportal' || !o.consoles.publisher) return false;
      seeOther(res, '/publisher');
      return true;
    }
    const method = req.method ?? 'GET';
    const found = sessions.find(req);
    // An anonymous visitor's session is not kept: it is created at sign-in.
    const session = found ?? anonymousSession();
    const rest = p
      .slice(which.length + 1)
      .split('/')
      .filter((x) => x !== '');
    let segs: string[];
    try {
      segs = rest.map((x) => decodeURIComponent(x));
    } catch {
      segs = ['\u0000'];
    }
    let form = new URLSearchParams();
    let files: readonly FormFile[] = [];
    const c0 = { parts, req, res, method, segs, query: url.searchParams, session, form, cookies: [] as string[] };
    try {
      if (method === 'POST') {
        const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
        // The publisher's forms that carry a .proto file take up to MAX_PROTO_UPLOAD_BODY (docs/grpc.md), in a session only.
        const protoForm =
          found !== undefined && which === 'publisher' && (rest.join('/') === 'new' || (rest[0] === 'apis' && rest[2] === 'protos'));
        const body = await readBody(req, protoForm ? MAX_PROTO_UPLOAD_BODY : undefined);
        // Those forms have file inputs: a browser posts them as multipart/form-data (RFC 7578, multipart.ts).
        const multipart = protoForm && type === 'multipart/form-data' ? boundaryOf(req.headers['content-type'] ?? '') : undefined;
        if (multipart !== undefined) {
          const m = parseMultipart(body, multipart);
          if (typeof m === 'string') {
            problem(c0, which, 400, 'Unreadable form', `The form's multipart/form-data body cannot be read: ${m}.`);
            return true;
          }
          form = m.fields;
          files = m.files;
        } else if (type !== 'application/x-www-form-urlencoded') {
          problem(
            c0,
            which,
            415,
            'Unsupported form',
            protoForm
              ? 'Forms are posted as application/x-www-form-urlencoded, or multipart/form-data with its boundary.'
              : 'Forms are posted as application/x-www-form-urlencoded.',
          );
          return true;
        } else form = new URLSearchParams(body.toString('utf8'));
        // The account forms of visitors (signup.ts) carry a token of their own: they have no session.
        const anonymousForm = which === 'devportal' && rest.length === 1 && ANONYMOUS_FORMS.has(rest[0] as string);
        if (anonymousForm ? !anonymousForms.ok(req, form) : !csrfOk(found, form)) {
          o.logger.log('warn', 'portal_csrf_refused', { path: p, session: found !== undefined });
          problem(
            { ...c0, form },
            which,
            403,
            'Request refused',
            'The form was not posted from this console (missing or wrong CSRF token). Reload the page and try again.',
          );
          return true;
        }
      } else if (method !== 'GET' && method !== 'HEAD') {
        res.writeHead(405, { Allow: 'GET, POST', 'Content-Length': 0 });
        res.end();
        return true;
      }
      // A remote control plane's API files, read once for the page (remote-catalogue.ts).
      await o.catalogue.refresh();
      await route({ ...c0, form, files }, which);
    } catch (err) {
      if (res.headersSent) throw err;
      if (err instanceof PortalRemoteError) {
        o.logger.log('error', 'portal_remote_failed', { path: p, code: err.code, message: err.message });
        problem({ ...c0, form }, which, 502, 'Key manager unreachable', `${err.code}: ${err.message}`);
        return true;
      }
      if (err instanceof OAuthError && err.status < 500) {
        // A body over the limit is not read further: the connection closes after the answer.
        if (err.headers.Connection !== undefined) res.setHeader('Connection', err.headers.Connection);
        problem({ ...c0, form }, which, err.status, 'Request refused', err.message);
        return true;
      }
      o.logger.log('error', 'portal_error', { path: p, message: (err as Error).message });
      problem({ ...c0, form }, which, 500, 'Internal error', 'Something went wrong; see the server log.');
    }
    return true;
  };

  return {
    handler,
    sessions,
    async register(origins) {
      return signin.register(origins);
    },
  };
}
