/**
 * The management listeners' defences (docs/security.md, "The management port"):
 *
 * - Where they bind: with the built-in default super admin password (`[super_admin] password = "admin"`,
 *   spec 001's default) they bind to loopback only, whatever address was asked, so the default
 *   credentials are never reachable from another machine; a changed password lets them bind as configured.
 * - Limits, from spec 001's `[transport.http.properties]` / `[transport.https.properties]` keys where the
 *   spec has one (keepAliveTimeout, maxKeepAliveRequests, acceptCount, maxHttpHeaderSize) and
 *   `[throughway.management]` otherwise (header_timeout, unless the reference's connectionTimeout is written;
 *   request_timeout, max_connections): a request head
 *   or body trickled in slowly is closed, idle keep-alive connections are closed, connections beyond the
 *   limit are closed at once.
 */
import type * as http from 'node:http';
import type { DeploymentConfig } from '../config/deployment-config.generated';

import { DEFAULT_ADMIN_PASSWORD } from '../config/admin-password';

export { DEFAULT_ADMIN_PASSWORD };

/** The address a management listener binds to when the default password is configured. */
export const LOOPBACK = '127.0.0.1';

export function usesDefaultAdminPassword(config: DeploymentConfig): boolean {
  return config.super_admin.create_admin_account && config.super_admin.password === DEFAULT_ADMIN_PASSWORD;
}

/**
 * The host a management listener binds to: `asked` (undefined: every interface) unless the default
 * super admin password is configured, then loopback (a loopback address asked stays as asked).
 */
export function managementHost(config: DeploymentConfig, asked: string | undefined): string | undefined {
  if (!usesDefaultAdminPassword(config)) return asked;
  if (asked === 'localhost' || asked === '::1' || (asked !== undefined && asked.startsWith('127.'))) return asked;
  return LOOPBACK;
}

/** Why the management port is on loopback, and how to change that (printed by `start`). */
export const LOOPBACK_REASON =
  'the super admin has the built-in default password "admin", so the management ports listen on 127.0.0.1 only; set [super_admin] password (e.g. password = "$env{ADMIN_PASSWORD}") in deployment.toml and change the stored password to listen on every interface (docs/security.md)';

export interface ListenerLimits {
  /** http.Server headersTimeout: the request head must arrive within this. */
  readonly headersTimeout: number;
  /** http.Server requestTimeout: the whole request must arrive within this. */
  readonly requestTimeout: number;
  /** http.Server keepAliveTimeout: idle keep-alive connections closed after this. */
  readonly keepAliveTimeout: number;
  /** http.Server maxRequestsPerSocket (0: no limit). */
  readonly maxRequestsPerSocket: number;
  /** net.Server maxConnections. */
  readonly maxConnections: number;
  /** Bytes of a request head (431 above). */
  readonly maxHeaderSize: number;
  /** listen() backlog. */
  readonly backlog: number;
}

export function listenerLimits(config: DeploymentConfig, https: boolean): ListenerLimits {
  const t = https ? config.transport.https.properties : config.transport.http.properties;
  const m = config.throughway.management;
  const requestTimeout = Number(m.request_timeout);
  return {
    // connectionTimeout, the reference's connector attribute, when written (docs/security.md). Node refuses
    // a head timeout longer than the request timeout.
    headersTimeout: Math.min(t.connectionTimeout ?? Number(m.header_timeout), requestTimeout),
    requestTimeout,
    keepAliveTimeout: t.keepAliveTimeout,
    maxRequestsPerSocket: t.maxKeepAliveRequests < 0 ? 0 : t.maxKeepAliveRequests,
    maxConnections: m.max_connections,
    maxHeaderSize: t.maxHttpHeaderSize,
    backlog: t.acceptCount,
  };
}

/** Options for http.createServer / https.createServer. */
export function serverOptions(l: ListenerLimits): http.ServerOptions {
  return {
    maxHeaderSize: l.maxHeaderSize,
    headersTimeout: l.headersTimeout,
    requestTimeout: l.requestTimeout,
    keepAliveTimeout: l.keepAliveTimeout,
    // Node checks the two timeouts this often (default 30 s): a tenth of the shorter, within 100 ms..1 s.
    connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(l.headersTimeout / 10))),
  };
}

/** The limits http.ServerOptions does not carry. */
export function applyLimits(s: http.Server, l: ListenerLimits): void {
  s.keepAliveTimeout = l.keepAliveTimeout;
  s.maxRequestsPerSocket = l.maxRequestsPerSocket;
  s.maxConnections = l.maxConnections;
}
