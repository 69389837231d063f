/**
 * Client authentication, one implementation for every endpoint a client authenticates to: the token
 * endpoint (RFC 6749 §3.2.1), revocation (RFC 7009 §2.1) and introspection (RFC 7662 §2.1).
 *
 * Methods (the discovery metadata lists exactly these, from CLIENT_AUTH_METHODS):
 * - `client_secret_basic`: HTTP Basic where the client id and secret are first encoded with
 *   application/x-www-form-urlencoded (RFC 6749 §2.3.1, Appendix B), so `+` is a space and `%XX` an
 *   octet: a secret `a+b/c` travels as `a%2Bb%2Fc` inside the base64.
 * - `client_secret_post`: `client_id` and `client_secret` in the form body.
 * One method per request (RFC 6749 §2.3): Basic plus a body secret is invalid_request. A failure is
 * invalid_client, 401, with a Basic challenge (RFC 6749 §5.2). The secret's digest is compared even
 * for an unknown client, so the answer's timing does not tell which client ids exist.
 */
import { verifyDigest } from '../store/passwords';
import type { Application, OAuthClient, Store } from '../store/types';
import { OAuthError } from './errors';

export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post';

/** What the metadata's *_endpoint_auth_methods_supported say (keymanager/discovery.ts). */
export const CLIENT_AUTH_METHODS: readonly ClientAuthMethod[] = ['client_secret_basic', 'client_secret_post'];

export interface AuthenticatedClient {
  readonly client: OAuthClient;
  readonly application: Application;
  readonly method: ClientAuthMethod;
}

/** The challenge sent with invalid_client (RFC 6749 §5.2, RFC 7617 §2.1). */
export const CLIENT_CHALLENGE = 'Basic realm="throughway", charset="UTF-8"';

/**
 * HTTP Basic user and password as sent (RFC 7617 §2), not form-decoded: the super admin's credentials
 * on the admin API. Undefined when the header is absent or not well-formed Basic.
 */
export function parseBasic(header: string | undefined): { user: string; password: string } | undefined {
  if (header === undefined) return undefined;
  const m = /^Basic\s+([A-Za-z0-9+/=._~-]+)\s*$/i.exec(header);
  if (m === null) return undefined;
  const text = Buffer.from(m[1] ?? '', 'base64').toString('utf8');
  const at = text.indexOf(':');
  if (at < 0) return undefined;
  return { user: text.slice(0, at), password: text.slice(at + 1) };
}

/** RFC 6749 Appendix B: `+` is a space, `%XX` an octet of UTF-8; a malformed escape is refused. */
function formDecode(s: string): string | undefined {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

function one(form: URLSearchParams, name: string): string | undefined {
  const all = form.getAll(name);
  if (all.length > 1) throw new OAuthError('invalid_request', `parameter ${name} is repeated`);
  const v = all[0];
  return v === undefined || v === '' ? undefined : v;
}

export interface PresentedClient {
  readonly id: string;
  readonly secret: string;
  readonly method: ClientAuthMethod;
}

/**
 * The client credentials a request presents, decoded, or undefined when it presents none. Malformed
 * Basic credentials are invalid_client; two methods at once are invalid_request.
 */
export function presentedClient(authorization: string | undefined, form: URLSearchParams): PresentedClient | undefined {
  const challenge = { headers: { 'WWW-Authenticate': CLIENT_CHALLENGE } };
  const isBasic = authorization !== undefined && /^Basic\s/i.test(authorization);
  const bodyId = one(form, 'client_id');
  const bodySecret = one(form, 'client_secret');
  if (isBasic) {
    const raw = parseBasic(authorization);
    const id = raw === undefined ? undefined : formDecode(raw.user);
    const secret = raw === undefined ? undefined : formDecode(raw.password);
    if (id === undefined || secret === undefined || id === '')
      throw new OAuthError('invalid_client', 'malformed HTTP Basic client credentials (RFC 6749 §2.3.1)', challenge);
    if (bodySecret !== undefined)
      throw new OAuthError(
        'invalid_request',
        'use one client authentication method: HTTP Basic or client_secret in the body (RFC 6749 §2.3)',
      );
    if (bodyId !== undefined && bodyId !== id)
      throw new OAuthError('invalid_request', 'client_id in the body differs from the authenticated client');
    return { id, secret, method: 'client_secret_basic' };
  }
  if (bodyId !== undefined && bodySecret !== undefined) return { id: bodyId, secret: bodySecret, method: 'client_secret_post' };
  return undefined;
}

/** Authenticates the client a request presents (either method); invalid_client, 401, otherwise. */
export async function authenticateClient(
  store: Store,
  authorization: string | undefined,
  form: URLSearchParams,
): Promise<AuthenticatedClient> {
  const challenge = { headers: { 'WWW-Authenticate': CLIENT_CHALLENGE } };
  const p = presentedClient(authorization, form);
  if (p === undefined)
    throw new OAuthError(
      'invalid_client',
      'client authentication required: HTTP Basic with the consumer key and secret, or client_id and client_secret in the body',
      challenge,
    );
  return checkClient(store, p);
}

/** Checks presented credentials against the store. */
export async function checkClient(store: Store, p: PresentedClient): Promise<AuthenticatedClient> {
  const challenge = { headers: { 'WWW-Authenticate': CLIENT_CHALLENGE } };
  const client = await store.getClient(p.id);
  const ok = verifyDigest(p.secret, client?.secretHash ?? '0'.repeat(64));
  if (client === undefined || !ok) throw new OAuthError('invalid_client', 'client authentication failed', challenge);
  const application = await store.getApplication(client.applicationId);
  if (application === undefined)
    throw new OAuthError('invalid_client', 'client authentication failed: its application was deleted', challenge);
  return { client, application, method: p.method };
}
