/**
 * How the consoles sign users in (docs/portal.md, "Sign-in"): each console is an OAuth client of this
 * server's key manager and uses the authorization code grant with PKCE (RFC 6749 §4.1, RFC 7636 S256);
 * it has no password form of its own.
 *
 * At start the portal registers one first-party application per node, `throughway-consoles <origin>`,
 * owned by the super admin, with one client per origin a browser may use: the PRODUCTION key for the
 * management HTTPS origin and the SANDBOX key for the HTTP one (an application holds one client per key
 * type, and the key manager matches the redirect URI exactly). Keys are generated again at every start,
 * so the secret lives only in this process; console nodes sharing one database each have their own
 * application. First-party: the key manager skips its consent page for these clients.
 *
 * The callback checks `state` against the session, redeems the code with the verifier, verifies the
 * access token and reads the user's roles from the store.
 */
import { createHash } from 'node:crypto';
import type { KeyManager } from '../keymanager';
import { randomToken } from '../store/passwords';
import type { Store } from '../store/types';
import type { PortalUser } from './session';

export const CONSOLES_APP = 'throughway-consoles';

/** The consoles' own applications (one per node), hidden from the portal's lists. */
export function isConsolesApp(name: string): boolean {
  return name === CONSOLES_APP || name.startsWith(`${CONSOLES_APP} `);
}
export const CALLBACK_PATH = '/devportal/callback';

export interface ConsoleClient {
  /** Origin the browser uses, e.g. http://localhost:9763. */
  readonly origin: string;
  readonly redirectUri: string;
  readonly consumerKey: string;
  readonly consumerSecret: string;
}

export class SignIn {
  private readonly clients: ConsoleClient[] = [];

  constructor(
    private readonly km: KeyManager,
    private readonly store: Store,
  ) {}

  /** Registers (again) the consoles' clients for these origins: `http` and, when listening, `https`. */
  async register(origins: { readonly http: string | undefined; readonly https: string | undefined }): Promise<ReadonlySet<string>> {
    const m = this.km.manager;
    const owner = this.km.settings.adminUser;
    const name = `${CONSOLES_APP} ${origins.https ?? origins.http ?? ''}`.trim();
    const existing = await this.store.findApplication(name, owner);
    const app = existing ?? (await m.createApplication({ name, owner, description: 'The developer portal and the publisher (lib/portal): first-party OAuth clients' }));
    this.clients.length = 0;
    for (const [origin, keyType] of [[origins.https, 'PRODUCTION'], [origins.http, 'SANDBOX']] as const) {
      if (origin === undefined) continue;
      const redirectUri = `${origin}${CALLBACK_PATH}`;
      const k = await m.generateKeys(app.id, { keyType, grantTypes: ['authorization_code', 'refresh_token'], callbackUrl: redirectUri });
      this.clients.push({ origin, redirectUri, consumerKey: k.consumerKey, consumerSecret: k.consumerSecret });
    }
    return new Set(this.clients.map((c) => c.consumerKey));
  }

  /** The client of the origin a request came to (same scheme; the registered host wins). */
  clientFor(secure: boolean): ConsoleClient | undefined {
    return this.clients.find((c) => c.origin.startsWith(secure ? 'https:' : 'http:')) ?? this.clients[0];
  }

  /** The authorization request: where to send the browser, and what the session keeps. */
  begin(client: ConsoleClient): { location: string; state: string; verifier: string } {
    const verifier = randomToken(48);
    const state = randomToken(16);
    const challenge = createHash('sha256').update(verifier, 'ascii').digest('base64url');
    const u = new URL('/oauth2/authorize', client.origin);
    u.searchParams.set('response_type', 'code');
    u.searchParams.set('client_id', client.consumerKey);
    u.searchParams.set('redirect_uri', client.redirectUri);
    u.searchParams.set('scope', 'openid');
    u.searchParams.set('state', state);
    u.searchParams.set('code_challenge', challenge);
    u.searchParams.set('code_challenge_method', 'S256');
    return { location: `${u.pathname}${u.search}`, state, verifier };
  }

  /** Redeems the code at the token endpoint (in process) and returns the signed-in user. */
  async finish(client: ConsoleClient, code: string, verifier: string): Promise<PortalUser> {
    const form = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: verifier });
    const basic = `Basic ${Buffer.from(`${client.consumerKey}:${client.consumerSecret}`).toString('base64')}`;
    const tokens = await this.km.oauth.token(basic, form);
    const claims = await this.km.oauth.verifyAccessToken(tokens.access_token);
    if (claims === undefined || typeof claims.sub !== 'string') throw new Error('the key manager issued a token it does not verify');
    const user = await this.store.getUser(claims.sub);
    return { username: claims.sub, roles: user?.roles ?? [] };
  }
}
