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
 * - HTTPS answers carry Strict-Transport-Security (`hsts_max_age`, a year by default).
 * - One client's share: at most `max_connections_per_address` (a tenth of max_connections unless written)
 *   open connections come from one address (an IPv6 client counted by its /64, the smallest prefix a site
 *   is assigned, RFC 6177 §3); more from it are closed at once, so one client cannot hold every slot of
 *   max_connections and cut the token endpoint, sign-in and consoles off for the others. A connection that
 *   sends nothing is closed after the head timeout (Node's headersTimeout counts from the accept: measured,
 *   Node 20, a silent socket closed with 408 after the timeout); a TLS handshake must end within it too.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import type * as net from 'node:net';
import type * as tls from 'node:tls';
import type { Logger } from '../log';
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
  /** Open connections from one client address (IPv6: one /64) at most. */
  readonly maxPerAddress: number;
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
    maxPerAddress: Math.min(m.max_connections, m.max_connections_per_address ?? Math.max(1, Math.floor(m.max_connections / 10))),
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

/** The limits http.ServerOptions does not carry, and the per-address share. */
export function applyLimits(s: http.Server, l: ListenerLimits, logger?: Logger): void {
  s.keepAliveTimeout = l.keepAliveTimeout;
  s.maxRequestsPerSocket = l.maxRequestsPerSocket;
  s.maxConnections = l.maxConnections;
  limitPerAddress(s, l.maxPerAddress, logger);
}

/**
 * The counting key of a client address: an IPv4 address (an IPv4-mapped IPv6 one as IPv4), or the first
 * four groups (the /64) of an IPv6 address.
 */
export function addressKey(address: string | undefined): string {
  if (address === undefined || address === '') return '';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null) return mapped[1] as string;
  if (!address.includes(':')) return address;
  // Expand "::" so the first four groups are known.
  const [head = '', tail] = address.toLowerCase().split('%')[0]!.split('::') as [string, string | undefined];
  const h = head === '' ? [] : head.split(':');
  const t = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? h : [...h, ...Array<string>(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t];
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/**
 * Closes a connection at once when its address already holds `max` open ones on this listener. Counts
 * the raw TCP connections (before TLS), as maxConnections does; a count is forgotten when its last
 * connection closes, so the map holds at most max_connections entries.
 */
export function limitPerAddress(s: net.Server, max: number, logger?: Logger): void {
  const open = new Map<string, number>();
  /** Addresses whose filling was logged: once per filling, not per refused connection (a flood would flood the log). */
  const logged = new Set<string>();
  s.on('connection', (socket: net.Socket) => {
    const key = addressKey(socket.remoteAddress);
    const n = open.get(key) ?? 0;
    if (n >= max) {
      if (!logged.has(key)) {
        logged.add(key);
        logger?.log('warn', 'management_address_full', { address: key, max_connections_per_address: max });
      }
      socket.destroy();
      return;
    }
    open.set(key, n + 1);
    socket.once('close', () => {
      const left = (open.get(key) ?? 1) - 1;
      if (left <= 0) open.delete(key);
      else open.set(key, left);
      if (left < max) logged.delete(key);
    });
  });
}

/**
 * A management listener with every limit above (the key manager's, and a console or operations port of a
 * node without one): HTTP, or HTTPS with `tlsOptions`. Listen with `limits.backlog`.
 */
export function createManagementServer(
  config: DeploymentConfig,
  handler: http.RequestListener,
  logger: Logger | undefined,
  tlsOptions?: tls.TlsOptions,
): { server: http.Server; limits: ListenerLimits } {
  const limits = listenerLimits(config, tlsOptions !== undefined);
  const hsts = config.throughway.management.hsts_max_age;
  if (tlsOptions !== undefined && hsts > 0) {
    // RFC 6797 §7.1: every answer over TLS carries the header (pages, the admin API, token endpoint); never
    // over plain HTTP (§7.2), where a browser ignores it. No includeSubDomains: other hosts of the domain
    // are not this server's to bind to HTTPS.
    const value = `max-age=${hsts}`;
    const inner = handler;
    handler = (req, res) => {
      res.setHeader('Strict-Transport-Security', value);
      inner(req, res);
    };
  }
  // The TLS handshake is bounded like the head (Node's default handshakeTimeout is 120 s).
  const server =
    tlsOptions !== undefined
      ? https.createServer({ ...tlsOptions, ...serverOptions(limits), handshakeTimeout: limits.headersTimeout }, handler)
      : http.createServer(serverOptions(limits), handler);
  applyLimits(server, limits, logger);
  return { server, limits };
}
