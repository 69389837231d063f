/**
 * The web consoles' OAuth clients (docs/portal.md, "Sign-in"): one application per console origin set,
 * `throughway-consoles <origin>`, owned by the super admin, with the PRODUCTION key for the HTTPS origin
 * and the SANDBOX key for the HTTP one (an application holds one client per key type; the redirect URI
 * is matched exactly). A console in the key manager's own process registers them by function call
 * (lib/portal/signin.ts); a console node pointing at a remote key manager registers them through
 * POST /admin/v1/console-clients (super admin credentials; docs/admin-api.md). Either way the key
 * manager then treats them as first-party: a signed-in user is not asked for consent. Only the super
 * admin can make a client first-party, and only a client of an application of that name owned by the
 * super admin.
 */
import type { Store } from '../store/types';
import type { Manager } from './manage';

export const CONSOLES_APP = 'throughway-consoles';
export const CALLBACK_PATH = '/devportal/callback';

/** The consoles' own applications, hidden from the portal's lists. */
export function isConsolesApp(name: string): boolean {
  return name === CONSOLES_APP || name.startsWith(`${CONSOLES_APP} `);
}

/** True for an application the node made for its consoles: the name, and owned by the super admin. */
export function isInternalApp(app: { readonly name: string; readonly owner: string }, adminUser: string): boolean {
  return app.owner === adminUser && isConsolesApp(app.name);
}

/**
 * An application list as users see it (`throughway apps list`, GET /admin/v1/applications, hence
 * `throughway dump`; docs/key-manager.md): without the consoles' own applications, which nobody created
 * by hand. They stay reachable by name (GET /admin/v1/applications/{name}).
 */
export function withoutInternalApps<T extends { readonly name: string; readonly owner: string }>(
  list: readonly T[],
  adminUser: string,
): T[] {
  return list.filter((a) => !isInternalApp(a, adminUser));
}

/**
 * What the sign-in page calls a client: the application's name, but for the consoles' own application
 * the consoles in words with the origin the browser goes back to (docs/portal.md, "Sign-in").
 */
export function clientDisplayName(app: { readonly name: string; readonly owner: string }, adminUser: string, redirectUri: string): string {
  if (!isInternalApp(app, adminUser)) return app.name;
  let origin = '';
  try {
    origin = new URL(redirectUri).origin;
  } catch {
    // a consoles client's redirect URI is always an http(s) URL (registerConsoleClients)
  }
  return origin === '' || origin === 'null' ? 'the developer portal and publisher' : `the developer portal and publisher at ${origin}`;
}

export interface ConsoleClient {
  /** Origin the browser uses, e.g. http://localhost:9763. */
  readonly origin: string;
  readonly redirectUri: string;
  readonly consumerKey: string;
  readonly consumerSecret: string;
}

export interface ConsoleOrigins {
  readonly http: string | undefined;
  readonly https: string | undefined;
}

/** Registers (again: new keys) the consoles' clients for these origins. */
export async function registerConsoleClients(m: Manager, store: Store, owner: string, origins: ConsoleOrigins): Promise<ConsoleClient[]> {
  const name = `${CONSOLES_APP} ${origins.https ?? origins.http ?? ''}`.trim();
  const existing = await store.findApplication(name, owner);
  const app =
    existing ??
    (await m.createApplication({
      name,
      owner,
      description: 'The developer portal and the publisher (lib/portal): first-party OAuth clients',
    }));
  const out: ConsoleClient[] = [];
  for (const [origin, keyType] of [
    [origins.https, 'PRODUCTION'],
    [origins.http, 'SANDBOX'],
  ] as const) {
    if (origin === undefined) continue;
    const redirectUri = `${origin}${CALLBACK_PATH}`;
    const k = await m.generateKeys(app.id, { keyType, grantTypes: ['authorization_code', 'refresh_token'], callbackUrl: redirectUri });
    out.push({ origin, redirectUri, consumerKey: k.consumerKey, consumerSecret: k.consumerSecret });
  }
  return out;
}

/** True when the consumer key is a client of a consoles application owned by `owner` (the super admin). */
export async function isConsoleClient(store: Store, owner: string, consumerKey: string): Promise<boolean> {
  const c = await store.getClient(consumerKey);
  if (c === undefined) return false;
  const app = await store.getApplication(c.applicationId);
  return app !== undefined && app.owner === owner && isConsolesApp(app.name);
}
