/**
 * What every route of the management server (http.ts) shares: its context (RouteContext), reading a
 * request body (at most 64 KiB; 413 beyond) and a JSON object, answering JSON, and the admin's HTTP Basic
 * sign-in (requireAdmin, requireSuperAdmin: docs/admin-api.md). The routes of admin.ts, registration.ts
 * and workflow-routes.ts take these from here, so none of them imports the router that calls it.
 */
import type * as http from 'node:http';
import type { Logger } from '../log';
import type { OpsHandler } from '../events/observed';
import { checkUserPassword } from '../store/passwords';
import type { Store } from '../store/types';
import type { Deployments } from '../scale/deployments';
import { SUPER_TENANT, type Tenants } from '../tenants';
import type { Workflows } from '../workflows';
import { OAuthError } from './errors';
import type { KeyRing } from './keys';
import type { LoginGuard } from './lockout';
import type { Manager } from './manage';
import type { OAuthServer } from './oauth';
import { parseBasic } from './client-auth';

const MAX_BODY = 64 * 1024;
/** The largest request body of PUT /admin/v1/api-files/{id}/protos: the JSON of the .proto files uploaded. */
export const MAX_PROTO_UPLOAD_BODY = 1024 * 1024;

export interface RouteContext {
  readonly oauth: OAuthServer;
  readonly manager: Manager;
  readonly store: Store;
  readonly keys: KeyRing;
  readonly logger: Logger;
  readonly userRules: { username: RegExp; password: RegExp };
  /** Failed sign-ins slowed and locked (lib/keymanager/lockout.ts). */
  readonly guard?: LoginGuard;
  /** Health, liveness and metrics routes (lib/observability/routes.ts). */
  readonly ops?: OpsHandler;
  /** The API files and policies this control plane serves to gateway-workers (lib/scale/deployments.ts). */
  readonly deployments?: (labels?: readonly string[]) => Deployments;
  /** Pages served on the same port (the web consoles, lib/portal): true when it answered. */
  readonly site?: SiteHandler;
  /**
   * First-party clients (the consoles): signed-in users are not asked for consent (authorize.ts). Filled
   * by KeyManager.mount and POST /admin/v1/console-clients (console-clients.ts).
   */
  readonly firstParty: Set<string>;
  /** The API files of this control plane, for console nodes of another process (GET|PUT /admin/v1/api-files). */
  readonly apiFiles?: ApiFileService;
  /** The tenants (lib/tenants, docs/tenants.md): tenant management, and whose admin a caller is. */
  readonly tenants?: Tenants;
  /** Approval workflows (lib/workflows, docs/workflows.md): tasks, executors, the engine's callback. */
  readonly workflows?: Workflows;
}

/** A handler of more routes on the management port; resolves true when it answered the request. */
/** A stored API file: its id (`name.toml`, or `created:name.toml` for a draft; a tenant's `t:<domain>:` before it) and text. */
export interface ApiFileText {
  readonly id: string;
  readonly text: string;
}

/** A refused write or move: an OAuthError-like code, a message, and the fields the validator named. */
export interface ApiFileRefusal {
  readonly status: number;
  readonly message: string;
  /** Validator messages by API file field (lib/gateway/apis.ts API_FIELDS). */
  readonly fields: Readonly<Record<string, string>>;
}

/** A gRPC API's .proto files (beside its API file, named in its `[grpc] proto` list) and the methods they declare. */
export interface ApiProtos {
  readonly id: string;
  /** Whether the file is a gRPC API's (`type = "GRPC"`). */
  readonly grpc: boolean;
  readonly protos: readonly { readonly name: string; readonly text: string }[];
  /** The methods of the deployed definition ("/package.Service/Method"); none while the file does not validate. */
  readonly methods: readonly { readonly path: string; readonly kind: string }[];
}

/** What the admin API's api-files routes call (lib/portal/catalogue.ts LocalCatalogue implements it). */
export interface ApiFileService {
  /** The super tenant's files and drafts, or those of `tenant` (ids `t:<domain>:...`). */
  listFiles(tenant?: string): ApiFileText[];
  /** A file by id; a `t:<domain>:` id is that tenant's (the route checks the caller may reach it). */
  readFile(id: string): ApiFileText | undefined;
  /** Writes a validated file (`protos`: a gRPC API's .proto files, written beside it); `create`: refused when it exists. The id written, or why not. */
  writeFile(
    id: string,
    text: string,
    create: boolean,
    protos?: readonly { readonly name: string; readonly text: string }[],
  ): Promise<{ readonly id: string } | ApiFileRefusal>;
  /** Moves a file to a lifecycle state (apis_dir, or created/ for CREATED). */
  transitionFile(id: string, to: string): Promise<{ readonly id: string; readonly from: string } | ApiFileRefusal>;
  /** A gRPC API file's .proto files and methods (GET /admin/v1/api-files/{id}/protos); undefined: no such file. */
  readProtos?(id: string): ApiProtos | undefined;
  /** Adds or replaces .proto files of a gRPC API file, checked with it before anything is written. */
  writeProtos?(id: string, files: readonly { readonly name: string; readonly text: string }[]): Promise<ApiProtos | ApiFileRefusal>;
  /** Removes one .proto file from a gRPC API file's list (and the file, when no other API file beside it reads it). */
  removeProto?(id: string, name: string): Promise<ApiProtos | ApiFileRefusal>;
}

export type SiteHandler = (req: http.IncomingMessage, res: http.ServerResponse, path: string, url: URL) => Promise<boolean>;

export function readBody(req: http.IncomingMessage, max = MAX_BODY): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) {
        // Answer 413 and close the connection rather than read the rest (Connection: close below).
        req.removeAllListeners('data');
        req.pause();
        reject(
          new OAuthError('invalid_request', `request body larger than ${max} bytes`, {
            status: 413,
            headers: { Connection: 'close' },
          }),
        );
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** Who calls the admin API: an admin's user name and its tenant. */
export interface AdminCaller {
  readonly username: string;
  readonly tenant: string;
}

export async function readJson(req: http.IncomingMessage, max = MAX_BODY): Promise<Record<string, unknown>> {
  const body = await readBody(req, max);
  if (body.length === 0) return {};
  let v: unknown;
  try {
    v = JSON.parse(body.toString('utf8'));
  } catch {
    throw new OAuthError('invalid_request', 'the request body is not JSON');
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    throw new OAuthError('invalid_request', 'the request body must be a JSON object');
  return v as Record<string, unknown>;
}

/** What an admin's sign-in reads: the store, the sign-in guard, the tenants (also the node's runtime view, lib/node/status.ts). */
export type AdminAuthContext = Pick<RouteContext, 'store' | 'guard' | 'tenants'>;

/**
 * An admin by HTTP Basic: any stored user with the admin role, the super tenant's or a tenant's (whose
 * tenant must be active, docs/tenants.md); 401 with a challenge otherwise.
 */
export async function requireAdmin(ctx: AdminAuthContext, req: http.IncomingMessage): Promise<AdminCaller> {
  const challenge = { status: 401, headers: { 'WWW-Authenticate': 'Basic realm="throughway management", charset="UTF-8"' } };
  const creds = parseBasic(req.headers.authorization);
  if (creds === undefined) throw new OAuthError('invalid_client', 'super admin credentials required (HTTP Basic)', challenge);
  const address = req.socket.remoteAddress ?? '';
  ctx.guard?.check('admin', creds.user, address);
  const user = await checkUserPassword(ctx.store, creds.user, creds.password, ctx.tenants?.settings.signInIgnoresCase === true);
  if (user === undefined || !user.roles.includes('admin')) {
    await ctx.guard?.failed('admin', creds.user, address);
    throw new OAuthError('invalid_client', 'invalid super admin credentials', challenge);
  }
  ctx.guard?.succeeded('admin', creds.user, address);
  const tenant = user.tenant;
  if (tenant !== SUPER_TENANT && ctx.tenants?.state(tenant) !== 'active')
    throw new OAuthError('invalid_client', `tenant ${tenant} is not active`, challenge);
  return { username: user.username, tenant };
}

/** The super tenant's admin (requireAdmin), for what no tenant admin may do; 403 for a tenant's admin. */
export async function requireSuperAdmin(ctx: AdminAuthContext, req: http.IncomingMessage): Promise<string> {
  const caller = await requireAdmin(ctx, req);
  if (caller.tenant !== SUPER_TENANT)
    throw new OAuthError('access_denied', `${caller.username} is an admin of tenant ${caller.tenant}, not of the super tenant`);
  return caller.username;
}
