/**
 * A gateway-worker's link to its control plane (the `api-key-manager` or `default` node; spec 000,
 * part 1.1): the same KeyManagerLink the gateway uses in one process (lib/security), served over the
 * control plane's management HTTP port instead of by function calls:
 *
 *   GET /.well-known/openid-configuration   the issuer (`iss`) of its tokens
 *   GET /oauth2/jwks                        its public keys (RFC 7517), kept and re-read on every snapshot
 *   GET /admin/v1/signing-keys?tenant=*     every tenant's published keys (HTTP Basic; docs/tenants.md,
 *                                           "Signing keys"), re-read on every snapshot and on a tenant kid
 *                                           not held, at most once per keyRefetchInterval
 *   GET /admin/v1/snapshot                  applications, subscriptions, revoked token ids (HTTP Basic)
 *   GET /admin/v1/blocking-conditions?tenant=*  every tenant's blocking conditions (HTTP Basic)
 *   GET /admin/v1/deployments?labels=...    API files with the gateway's labels and the policies text
 *                                           (HTTP Basic; a gateway-worker's own, not a cluster worker's)
 *   POST /oauth2/introspect                 opaque tokens (RFC 7662; HTTP Basic)
 *   GET /admin/v1/users/<name>/claims       a user's backend JWT claims ([apim.jwt] enable_user_claims; HTTP Basic)
 *
 * Pulls follow the deployment retry of [apim.sync_runtime_artifacts.gateway] (deployment_retry_duration,
 * max_retry_count, retry_progression_factor): a control plane that is still starting is waited for.
 * The snapshot, pulled at start and again after every reconnect of the event hub, is what makes events
 * missed while disconnected harmless (docs/scale-out.md, "Snapshot on (re)connect").
 */
import * as http from 'node:http';
import * as https from 'node:https';
import type { JWK } from 'jose';
import type { KeyManagerLink, Snapshot } from '../security';
import type { TenantKey } from '../security/keys';
import type { BlockingCondition } from '../events/blocking';
import type { Logger } from '../log';
import { retryDelays, type RetrySettings } from './settings';
import type { Deployments } from './deployments';
import { ThroughwayError } from '../errors';

export class ControlPlaneError extends ThroughwayError {
  readonly code = 'CONTROL_PLANE_UNREACHABLE';
  /**
   * The control plane's answer when it gave one that is not 2xx: its status, and its JSON body when it
   * was JSON (the admin API's `{ error, error_description }`; docs/admin-api.md). Undefined: no answer.
   */
  constructor(
    message: string,
    readonly status?: number,
    readonly body?: Readonly<Record<string, unknown>>,
  ) {
    super(message);
  }
}

export interface ControlPlaneOptions {
  /** Origin of the control plane's management port (http://host:9763). */
  readonly url: string;
  readonly user: string;
  readonly password: string;
  readonly retry: RetrySettings;
  readonly logger: Logger;
  /**
   * Pull the API deployments and policies too, for these gateway_labels (a gateway-worker; a cluster
   * worker of a control plane node reads the apis/ directory it shares with its primary).
   */
  readonly deployments?: { readonly labels: readonly string[] };
  /** Tests: waits without a real clock. */
  readonly sleep?: (ms: number) => Promise<void>;
  /**
   * The shortest time between two reads of the tenants' keys on an unknown kid (`[throughway.security]
   * jwks_refetch_interval`, 10 s when not given), so made-up kids cannot make the worker ask on each token.
   */
  readonly keyRefetchInterval?: number;
}

export interface FullSnapshot extends Snapshot {
  readonly blocking: readonly BlockingCondition[];
  /** When ControlPlaneOptions.deployments asks for them. */
  readonly deployments?: Deployments;
}

/** request()'s answer to a conditional GET the control plane answered 304 (RFC 9110 §15.4.5). */
export const NOT_MODIFIED: Readonly<Record<string, unknown>> = Object.freeze({});

// Not unref()ed: a gateway-worker waiting for its control plane has nothing else keeping the process up.
const realSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class ControlPlane {
  private jwks: JWK[] = [];
  /** Every tenant's published keys by kid (docs/tenants.md, "Signing keys"). */
  private tenantKeys = new Map<string, TenantKey>();
  private tenantKeysAt = 0;
  private tenantFetch: Promise<void> | undefined;
  private iss = '';
  private readonly auth: string;

  constructor(private readonly o: ControlPlaneOptions) {
    this.auth = `Basic ${Buffer.from(`${o.user}:${o.password}`).toString('base64')}`;
  }

  /**
   * One request (a string body is a form, an object JSON); JSON answer of a 2xx, ControlPlaneError otherwise.
   * `ifNoneMatch`: an ETag; a 304 answer resolves with NOT_MODIFIED. `extra`: more request headers.
   */
  request(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    body?: string | Readonly<Record<string, unknown>>,
    withAuth = true,
    ifNoneMatch?: string,
    extra: Readonly<Record<string, string>> = {},
  ): Promise<Record<string, unknown>> {
    const url = new URL(path, this.o.url);
    const mod = url.protocol === 'https:' ? https : http;
    const headers: Record<string, string> = { ...extra, Accept: 'application/json' };
    if (ifNoneMatch !== undefined) headers['If-None-Match'] = `"${ifNoneMatch}"`;
    if (withAuth) headers.Authorization = this.auth;
    const payload = body === undefined || typeof body === 'string' ? body : JSON.stringify(body);
    if (payload !== undefined) {
      headers['Content-Type'] = typeof body === 'string' ? 'application/x-www-form-urlencoded' : 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(payload));
    }
    return new Promise((resolve, reject) => {
      const req = mod.request(url, { method, headers, timeout: 10_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (err) => reject(new ControlPlaneError(err.message)));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const status = res.statusCode ?? 0;
          if (status === 304 && ifNoneMatch !== undefined) {
            resolve(NOT_MODIFIED);
            return;
          }
          if (status < 200 || status >= 300) {
            let answer: Record<string, unknown> | undefined;
            try {
              const j = JSON.parse(text) as unknown;
              if (j !== null && typeof j === 'object' && !Array.isArray(j)) answer = j as Record<string, unknown>;
            } catch {
              answer = undefined;
            }
            reject(new ControlPlaneError(`${method} ${url.pathname}: HTTP ${status} ${text.slice(0, 200)}`, status, answer));
            return;
          }
          try {
            resolve(JSON.parse(text) as Record<string, unknown>);
          } catch {
            reject(new ControlPlaneError(`${method} ${url.pathname}: not JSON`));
          }
        });
      });
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', (err) => reject(new ControlPlaneError(`${method} ${url.href}: ${err.message}`)));
      req.end(payload);
    });
  }

  /** `what` with the deployment retry: the last error once every retry failed. */
  async withRetry<T>(what: string, f: () => Promise<T>): Promise<T> {
    const delays = retryDelays(this.o.retry);
    const sleep = this.o.sleep ?? realSleep;
    for (let attempt = 0; ; attempt++) {
      try {
        return await f();
      } catch (err) {
        const wait = delays[attempt];
        if (wait === undefined) throw err;
        this.o.logger.log('warn', 'control_plane_retry', {
          what,
          url: this.o.url,
          attempt: attempt + 1,
          retryInMs: wait,
          message: (err as Error).message,
        });
        await sleep(wait);
      }
    }
  }

  /** Issuer and keys: before the gateway validates its first token. */
  async start(): Promise<void> {
    await this.withRetry('keys', async () => {
      const d = await this.request('GET', '/.well-known/openid-configuration', undefined, false);
      if (typeof d.issuer !== 'string') throw new ControlPlaneError('the discovery document has no issuer');
      this.iss = d.issuer;
      await this.refreshKeys();
    });
  }

  async refreshKeys(): Promise<void> {
    const k = await this.request('GET', '/oauth2/jwks', undefined, false);
    if (!Array.isArray(k.keys)) throw new ControlPlaneError('the JWKS has no keys array');
    this.jwks = k.keys as JWK[];
    await this.refreshTenantKeys();
  }

  /** Every tenant's published keys, as the control plane's super admin (`?tenant=*`). */
  private async refreshTenantKeys(): Promise<void> {
    this.tenantKeysAt = Date.now();
    const r = await this.request('GET', '/admin/v1/signing-keys?tenant=*');
    if (!Array.isArray(r.tenants)) throw new ControlPlaneError('GET /admin/v1/signing-keys?tenant=*: no tenants array');
    const next = new Map<string, TenantKey>();
    for (const t of r.tenants as { tenant?: unknown; keys?: unknown }[]) {
      if (typeof t.tenant !== 'string' || !Array.isArray(t.keys)) continue;
      for (const jwk of t.keys as JWK[]) if (typeof jwk.kid === 'string') next.set(jwk.kid, { tenant: t.tenant, jwk });
    }
    this.tenantKeys = next;
  }

  /**
   * A tenant's key by kid; on a miss the tenants' keys are read again (a tenant made or rotated since the
   * last pull), at most once per keyRefetchInterval: a failed read keeps the keys held.
   */
  private async tenantKey(kid: string): Promise<TenantKey | undefined> {
    const had = this.tenantKeys.get(kid);
    if (had !== undefined) return had;
    if (this.tenantFetch === undefined && Date.now() - this.tenantKeysAt >= (this.o.keyRefetchInterval ?? 10_000)) {
      this.tenantFetch = this.refreshTenantKeys()
        .catch((err: unknown) => this.o.logger.log('warn', 'tenant_keys_unreachable', { url: this.o.url, message: (err as Error).message }))
        .finally(() => {
          this.tenantFetch = undefined;
        });
    }
    if (this.tenantFetch !== undefined) await this.tenantFetch;
    return this.tenantKeys.get(kid);
  }

  /** Snapshot, blocking conditions, deployments (when asked) and the current keys (rotation seen at every pull). */
  async pull(): Promise<FullSnapshot> {
    return this.withRetry('snapshot', async () => {
      const s = (await this.request('GET', '/admin/v1/snapshot')) as unknown as Snapshot;
      // Every tenant's, each with its tenant (docs/tenants.md, "Blocking conditions").
      const b = await this.request('GET', '/admin/v1/blocking-conditions?tenant=*');
      const want = this.o.deployments;
      const d =
        want !== undefined
          ? await this.request('GET', `/admin/v1/deployments?labels=${encodeURIComponent(want.labels.join(','))}`)
          : undefined;
      if (d !== undefined && !Array.isArray(d.apis)) throw new ControlPlaneError('GET /admin/v1/deployments: no apis array');
      await this.refreshKeys();
      return {
        applications: s.applications,
        subscriptions: s.subscriptions,
        revoked: s.revoked,
        blocking: (b.list ?? []) as BlockingCondition[],
        ...(d !== undefined ? { deployments: d as unknown as Deployments } : {}),
      };
    });
  }

  /**
   * One conditional GET of the deployments (no retry): 'unchanged' when the control plane's version is
   * `version` (304), else what it serves now. Rejects with ControlPlaneError when it does not answer.
   */
  async deploymentsIfChanged(version: string): Promise<Deployments | 'unchanged'> {
    const labels = this.o.deployments?.labels ?? [];
    const d = await this.request('GET', `/admin/v1/deployments?labels=${encodeURIComponent(labels.join(','))}`, undefined, true, version);
    if (d === NOT_MODIFIED) return 'unchanged';
    if (!Array.isArray(d.apis)) throw new ControlPlaneError('GET /admin/v1/deployments: no apis array');
    return d as unknown as Deployments;
  }

  /**
   * The gateway's KeyManagerLink (lib/security). Its snapshot() is a fresh pull: the gateway subscribes
   * to the bus first and then asks, so nothing published in between is lost. No signing key: a backend
   * JWT is signed with the gateway's own.
   */
  link(): KeyManagerLink {
    return {
      issuer: () => this.iss,
      publicJwks: () => this.jwks,
      tenantKey: (kid) => this.tenantKey(kid),
      snapshot: () => this.pull(),
      introspect: (token) => this.request('POST', '/oauth2/introspect', new URLSearchParams({ token }).toString()),
      userClaims: async (username) => {
        try {
          return (await this.request('GET', `/admin/v1/users/${encodeURIComponent(username)}/claims`)).claims as Record<string, string>;
        } catch (err) {
          if (err instanceof ControlPlaneError && / HTTP 404 /.test(err.message)) return undefined;
          throw err;
        }
      },
    };
  }
}
