/**
 * How the consoles sign users in (docs/portal.md, "Sign-in"): each console is an OAuth client of the key
 * manager and uses the authorization code grant with PKCE (RFC 6749 §4.1, RFC 7636 S256); it has no
 * password form of its own.
 *
 * At start the portal registers one first-party application per node, `throughway-consoles <origin>`,
 * owned by the super admin, with one client per origin a browser may use
 * (lib/keymanager/console-clients.ts): in process with the key manager of this node, or through
 * POST /admin/v1/console-clients on a remote key manager (lib/portal/backend.ts). Keys are generated
 * again at every start, so the secret lives only in this process. First-party: the key manager skips
 * its consent page for these clients; a remote one is asked again before each sign-in, so a key manager
 * restarted since still knows them.
 *
 * The callback checks `state` against the session, redeems the code with the verifier, learns whose
 * token it is (verified in process, or introspected by the remote key manager) and reads the user's
 * roles from the key manager.
 */
import { createHash } from 'node:crypto';
import { CALLBACK_PATH, type ConsoleClient, type ConsoleOrigins } from '../keymanager/console-clients';
import { randomToken } from '../store/passwords';
import type { PortalKeyManager } from './backend';
import type { PortalUser } from './session';

export { CALLBACK_PATH, CONSOLES_APP, type ConsoleClient, isConsolesApp } from '../keymanager/console-clients';

export class SignIn {
  private readonly clients: ConsoleClient[] = [];

  constructor(private readonly keys: PortalKeyManager) {}

  /** Registers (again) the consoles' clients for these origins: `http` and, when listening, `https`. */
  async register(origins: ConsoleOrigins): Promise<ReadonlySet<string>> {
    const clients = await this.keys.registerConsoles(origins);
    this.clients.length = 0;
    this.clients.push(...clients);
    return new Set(this.clients.map((c) => c.consumerKey));
  }

  /** The client of the origin a request came to (same scheme; the registered host wins). */
  clientFor(secure: boolean): ConsoleClient | undefined {
    return this.clients.find((c) => c.origin.startsWith(secure ? 'https:' : 'http:')) ?? this.clients[0];
  }

  /** The authorization request: where to send the browser, and what the session keeps. */
  async begin(client: ConsoleClient): Promise<{ location: string; state: string; verifier: string }> {
    await this.keys.confirmConsoleClient(client);
    const verifier = randomToken(48);
    const state = randomToken(16);
    const challenge = createHash('sha256').update(verifier, 'ascii').digest('base64url');
    const authorize = this.keys.authorizeUrl();
    const u = new URL(authorize, client.origin);
    u.searchParams.set('response_type', 'code');
    u.searchParams.set('client_id', client.consumerKey);
    u.searchParams.set('redirect_uri', client.redirectUri);
    u.searchParams.set('scope', 'openid');
    u.searchParams.set('state', state);
    u.searchParams.set('code_challenge', challenge);
    u.searchParams.set('code_challenge_method', 'S256');
    // In process: a path on this origin; remote: the key manager's full URL.
    return { location: authorize.startsWith('/') ? `${u.pathname}${u.search}` : u.href, state, verifier };
  }

  /** Redeems the code at the token endpoint and returns the signed-in user with the key manager's roles. */
  async finish(client: ConsoleClient, code: string, verifier: string): Promise<PortalUser> {
    const username = await this.keys.exchangeCode(client, code, verifier);
    return { username, roles: await this.keys.roles(username) };
  }
}
