/**
 * What every console route is given: the portal's parts (key manager, store, catalogue, sessions) and
 * one request's session, form and answer helpers. docs/portal.md.
 */
import type { PolicyNames } from '../throttle/policies';
import type * as http from 'node:http';
import type { Logger } from '../log';
import type { PortalKeyManager } from './backend';
import type { ApiCatalogue } from './catalogue';
import { page, SCRIPT_PAGE_HEADERS, sendHtml, type Frame } from './html';
import type { SelfService } from './selfservice';
import type { Session, Sessions } from './session';
import type { SignIn } from './signin';
import type { FormFile } from './multipart';
import type { AdminParts } from './admin';
import type { TenantState } from '../tenants';
import type { Auditor } from '../audit';

/** `[apim.devportal]` keys the developer portal acts on (docs/migrating.md). */
export interface DevportalSettings {
  /** List DEPRECATED APIs in the catalogue (display_deprecated_apis). */
  readonly displayDeprecated: boolean;
  /** List every version of an API; false: the newest of each name only (display_multiple_versions). */
  readonly displayMultipleVersions: boolean;
}

export interface PortalOptions {
  /** The key manager: in this process, or a remote one (backend.ts). */
  readonly keys: PortalKeyManager;
  /** The API files: this node's `[throughway] apis_dir` (catalogue.ts), or a remote control plane's (remote-catalogue.ts). */
  readonly catalogue: ApiCatalogue;
  readonly logger: Logger;
  readonly settings: DevportalSettings;
  /** Subscription tiers of the throttling policies, for the subscribe form. */
  readonly tiers: () => readonly string[];
  /** Application tiers of the throttling policies, for the application form. */
  readonly applicationTiers: () => readonly string[];
  /** Policy names of the throttling policies file, which the publisher's form checks policy fields against. */
  readonly policyNames?: () => PolicyNames | undefined;
  /** Gateway base URLs ([[apim.gateway.environment]], else this node's gateway listener). */
  readonly gateways: () => readonly { readonly name: string; readonly url: string }[];
  /** Which consoles this node serves (both on a default node; one on api-devportal and api-publisher). */
  readonly consoles: { readonly devportal: boolean; readonly publisher: boolean };
  /** Sign-up, account mail, sharing, comments, ratings, forum, SDKs (docs/self-service.md); absent with a remote key manager. */
  readonly selfService?: SelfService;
  /** The admin console's services (/admin, lib/portal/admin.ts): a node with its own key manager only. */
  readonly admin?: AdminParts;
  /**
   * The tenants (lib/tenants): whose a signed-in user is and whether a tenant is served, for the developer
   * portal's catalogue of a tenant (`/devportal?tenant=<domain>`, docs/tenants.md). Absent (a remote key
   * manager): the super tenant's catalogue only.
   */
  readonly tenants?: { tenantOf(username: string): string; state(domain: string): TenantState };
  /** The publisher's local security audit (lib/audit, docs/security-audit.md): present when `[security_audit]` is written and `global` is true. */
  readonly audit?: Auditor;
}

/** What the routes share: the options' services, and the portal's sessions and sign-in. */
export interface PortalParts extends Pick<
  PortalOptions,
  | 'keys'
  | 'catalogue'
  | 'logger'
  | 'settings'
  | 'tiers'
  | 'applicationTiers'
  | 'policyNames'
  | 'gateways'
  | 'consoles'
  | 'selfService'
  | 'admin'
  | 'tenants'
  | 'audit'
> {
  readonly sessions: Sessions;
  readonly signin: SignIn;
}

export interface Call {
  readonly parts: PortalParts;
  readonly req: http.IncomingMessage;
  readonly res: http.ServerResponse;
  readonly method: string;
  /** Path segments after the console's prefix, decoded. */
  readonly segs: readonly string[];
  readonly query: URLSearchParams;
  /** The session, created when the request had none (its cookie is then set on the answer). */
  readonly session: Session;
  /** The posted form (empty for GET), its CSRF token already checked. */
  readonly form: URLSearchParams;
  /** The files of a multipart form's file inputs (the publisher's .proto forms, multipart.ts); absent or empty otherwise. */
  readonly files?: readonly FormFile[];
  /** Set-Cookie headers the answer must carry. */
  readonly cookies: string[];
}

/** Roles that may use the publisher (the reference's Internal/publisher and Internal/creator, and the admin). */
export const PUBLISHER_ROLES: readonly string[] = [
  'admin',
  'publisher',
  'creator',
  'Internal/admin',
  'Internal/publisher',
  'Internal/creator',
];

export function canPublish(s: Session): boolean {
  return s.user !== undefined && s.user.roles.some((r) => PUBLISHER_ROLES.includes(r));
}

/** The self-service links of the header (docs/self-service.md): the forum for a signed-in user, sign-up for a visitor. */
function selfServiceNav(c: Call): [string, string][] {
  const s = c.parts.selfService?.settings;
  if (s === undefined) return [];
  if (c.session.user !== undefined) return s.forum ? [['/devportal/forum', 'Forum']] : [];
  return s.signUp ? [['/devportal/signup', 'Sign up']] : [];
}

/** Renders a console page with the frame of the call's session. */
export function render(c: Call, console: Frame['console'], title: string, body: string, status = 200, script = false): void {
  const nav: [string, string][] =
    console === 'devportal'
      ? [
          ['/devportal', 'APIs'],
          ...(c.session.user !== undefined ? ([['/devportal/applications', 'Applications']] as [string, string][]) : []),
          ...selfServiceNav(c),
          ...(canPublish(c.session) && c.parts.consoles.publisher ? ([['/publisher', 'Publisher']] as [string, string][]) : []),
        ]
      : console === 'publisher'
        ? [
            ['/publisher', 'APIs'],
            ['/publisher/new', 'Create API'],
            ...(c.parts.consoles.devportal ? ([['/devportal', 'Developer portal']] as [string, string][]) : []),
          ]
        : [
            ['/admin', 'Tasks'],
            ['/admin/applications', 'Applications'],
            ['/admin/blocking', 'Blocking'],
            ['/admin/policies', 'Policies'],
            ['/admin/tenants', 'Tenants'],
          ];
  // Only a page that carries the copy script allows it (by its hash): every other page allows no script.
  const headers = { ...(script ? SCRIPT_PAGE_HEADERS : {}), ...(c.cookies.length > 0 ? { 'Set-Cookie': c.cookies } : {}) };
  sendHtml(c.res, status, page({ console, title, user: c.session.user?.username, csrf: c.session.csrf, nav, script }, body), headers);
}

/** The error page of a console. */
export function problem(c: Call, console: Frame['console'], status: number, title: string, message: string): void {
  render(c, console, title, `<p class="error" role="alert">${message.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`)}</p>`, status);
}

/** Shows and drops the one-time message of the session. */
export function takeFlash(c: Call): string {
  const f = c.session.flash;
  c.session.flash = undefined;
  return f ?? '';
}
