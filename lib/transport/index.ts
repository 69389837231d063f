/**
 * The bare pass-through transport, usable alone: createTransport({ route }) gives a proxy that listens on
 * its own port or takes sockets another server accepted (handleConnection). It knows nothing about APIs
 * or tokens; lib/gateway routes through it.
 */
import * as net from 'node:net';
import * as tls from 'node:tls';
import { performance } from 'node:perf_hooks';
import { TransportCore, defaultConnect, defaultRenderFault, type ConnectFn, type TransportStats } from './core';
import { SourceConnection, type Adoption } from './source';
import { nextBuffer, SHARED_READ_BUFFER, sourceReadCallback, type ReadHolder } from './read-buffers';
import { resolveSettings, type TransportSettings } from './settings';
import { selfTest } from './parser';
import type { RoutePool } from './pool';
import { silentLogger, type Logger } from '../log';
import type { FaultRenderer, RouteFn, TransportEvents, TunnelInfo } from './types';

export interface TransportOptions {
  /** Decides, per request head, where it goes (or answers it). */
  readonly route: RouteFn;
  readonly settings?: Partial<TransportSettings>;
  readonly logger?: Logger;
  readonly renderFault?: FaultRenderer;
  readonly events?: TransportEvents;
  /** How backend sockets are opened (tests inject failures here; default net.connect). */
  readonly connect?: ConnectFn;
  /**
   * Re-wrap sockets accepted by listen() so they read into connection-owned buffers (default true). false
   * serves them as Node accepts them (its own 64 KiB reads): the path the transport also takes by itself on
   * a Node line without the details adopt() relies on (docs/transport.md, "Read buffers").
   */
  readonly adoptAcceptedSockets?: boolean;
}

export interface PoolInfo {
  readonly key: string;
  readonly open: number;
  readonly idle: number;
  readonly waiting: number;
  /** [passthru_http] 'http.max.connection.per.host.port'. */
  readonly max: number;
  /** Connections open or opening that are not idle: serving an exchange, or connecting for one. */
  readonly inUse: number;
  /** Faults of the route's connections since start (connect refused, timeouts, resets, ...). */
  readonly failures: number;
  /** The latest of them: its code, base, state, reason, cause, and wall-clock time. */
  readonly lastError?: {
    readonly code: number;
    readonly base: number;
    readonly state: number;
    readonly reason: string;
    readonly cause: string | undefined;
    readonly at: number;
  };
}

export interface ListenOptions {
  readonly port: number;
  readonly host?: string;
  readonly backlog?: number;
  /**
   * Another protocol on this listener (HTTP/2, lib/http2): with TLS, offered by ALPN before http/1.1 and
   * chosen once per connection at the handshake; on the plain listener, taken by its preface (prior
   * knowledge). Without it the listener serves HTTP/1.x only, exactly as before.
   */
  readonly handover?: ProtocolHandover;
}

/** Connections of another protocol, handed over whole by a listener (ListenOptions.handover). */
export interface ProtocolHandover {
  /** The ALPN id offered before http/1.1 on TLS listeners (RFC 7301), e.g. "h2". */
  readonly alpn: string;
  /**
   * The first bytes of a plain connection that speaks it with prior knowledge (HTTP/2's client preface,
   * RFC 9113 §3.4); undefined: plain listeners do not take it.
   */
  readonly preface: Buffer | undefined;
  /** Serve one connection (its bytes already read are unshifted back onto the socket). */
  serve(socket: net.Socket): void;
  /** close(): the protocol's connections end gracefully (HTTP/2: GOAWAY), within `ms`. */
  close(ms: number): Promise<void>;
}

export interface Transport {
  readonly settings: TransportSettings;
  readonly stats: Readonly<TransportStats>;
  /** Open connections: sources (clients), targets (backend sockets, idle ones included). */
  connections(): {
    readonly sources: number;
    readonly targets: number;
    readonly idleTargets: number;
    readonly inFlight: number;
    readonly queued: number;
  };
  /** Open connections by protocol state (index = ProtocolState 0..8), counted when asked (a metrics scrape). */
  connectionStates(): { readonly sources: number[]; readonly targets: number[] };
  /** The keep-alive pools: per backend host:port, connections open or opening, idle ones, waiting exchanges. */
  pools(): PoolInfo[];
  /**
   * Open client connections by the local port that accepted them (the runtime view's listeners), counted
   * when asked. Sockets without a port (in-process pairs: inject(), HTTP/2 streams) are not in it.
   */
  sourcesByPort(): Map<number, number>;
  /**
   * Serve a socket accepted elsewhere (an embedding server's 'connection' event). `clientVersion`: the
   * version the client really speaks when the socket carries another protocol's requests rewritten as
   * HTTP/1.1 (lib/http2: "2.0"), named in the exchange records (access log).
   */
  handleConnection(socket: net.Socket, secure?: boolean, clientVersion?: string): void;
  /** Listen on a port of its own (max_open_connections applies). */
  listen(options: ListenOptions): Promise<net.AddressInfo>;
  /**
   * Listen with TLS (the HTTPS and WSS listeners, docs/tls.md). The server is returned so its
   * certificates can be replaced without a restart (setSecureContext: existing connections keep theirs).
   * TLS sockets are served as accepted (no re-wrapping of the handle: it belongs to the TLS layer).
   */
  listenTls(options: ListenOptions, tlsOptions: tls.TlsOptions): Promise<tls.Server>;
  /** Open WebSocket tunnels, with their frame and byte counts (docs/websocket.md). */
  tunnels(): readonly TunnelInfo[];
  /**
   * This transport takes upgrade requests on sockets handed over by another server (gateway.handleUpgrade):
   * a WebSocket handshake to a WS API becomes a tunnel; any other Upgrade is hop-by-hop and answered as a
   * plain call (RFC 9110 §7.8 lets a server ignore it).
   */
  readonly tunnelsUpgrades: true;
  /** Stop accepting, finish in-flight exchanges within shutdownTimeout, close idle keep-alives. */
  close(): Promise<void>;
}

let selfTested = false;

/**
 * How long idle keep-alive connections stay open once close() began (within shutdownTimeout). A client
 * may already be sending on an idle connection when the server closes it; the request is then lost, and
 * RFC 9112 §9.3.1 leaves its retry to the client (Node's http Agent does not retry). During this window
 * the transport is marked closing: a request that arrives is served with `Connection: close` and its
 * connection closes after the response, so a busy client learns of the close from a response, never from
 * a FIN under its request; only connections that carried no request for this long are closed idle.
 * test/scale/cluster-drain.test.ts measures it: keep-alive load across a SIGHUP roll and a SIGTERM of
 * one worker, no request lost.
 */
const DRAIN_IDLE_MS = 1000;

/** Marks the transport closing and waits up to `ms` for its client connections to close on their own. */
async function drainIdle(core: TransportCore, ms: number): Promise<void> {
  core.closing = true;
  const end = Date.now() + ms;
  while (core.sources.size > 0 && Date.now() < end)
    await new Promise<void>((resolve) => setTimeout(resolve, Math.min(20, Math.max(1, end - Date.now()))));
}

/**
 * Re-wraps an accepted socket's handle in a net.Socket that reads into connection-owned buffers (net's
 * onread), instead of Node's 64 KiB per read for accepted sockets, which Node 20 offers no public option to
 * change (larger reads brought 1 MiB uploads to nginx parity on a prototype).
 * Relies on two undocumented details, checked here, with a fallback to the socket as accepted: the
 * accepted socket's `_handle`, and `new net.Socket({ handle })`. The original wrapper is destroyed at
 * once, its handle detached first (keeping it until the new one closed cost about 0.7 KiB of heap per
 * idle connection: a heap snapshot of 10,000 idle clients, docs/performance.md). Node's server then no
 * longer counts the connection: the plain listener counts its own for max_open_connections, and
 * close() waits for the transport's connections itself (core.shutdown). docs/transport.md says so.
 */
function adopt(accepted: net.Socket, highWaterMark: number): { socket: net.Socket; adoption: Adoption } | undefined {
  const old = accepted as unknown as { _handle: unknown };
  const handle = old._handle;
  if (handle === null || typeof handle !== 'object' || typeof (handle as { readStart?: unknown }).readStart !== 'function')
    return undefined;
  // Read from the socket net accepted, which keeps it: read from the adopted one, net would add it to that
  // socket, whose hidden class then differs from the backend sockets' (read-buffers.ts, module comment).
  const address = accepted.remoteAddress ?? '';
  const port = accepted.remotePort ?? 0;
  // The first read is a request head: small; the connection picks larger buffers when reads fill them.
  const holder: ReadHolder = { conn: null, first: SHARED_READ_BUFFER };
  let socket: net.Socket;
  try {
    old._handle = null;
    socket = new net.Socket({
      handle,
      allowHalfOpen: true,
      readable: true,
      writable: true,
      readableHighWaterMark: highWaterMark,
      writableHighWaterMark: highWaterMark,
      onread: { buffer: () => nextBuffer(holder), callback: sourceReadCallback(holder) },
    } as net.SocketConstructorOpts);
  } catch {
    old._handle = handle;
    return undefined;
  }
  accepted.destroy();
  return { socket, adoption: { holder, address, port } };
}

export function createTransport(options: TransportOptions): Transport {
  if (!selfTested) {
    // A parser that mis-splits headers corrupts traffic silently: refuse to start instead.
    selfTest();
    selfTested = true;
  }
  const settings = resolveSettings(options.settings);
  const core = new TransportCore(
    settings,
    options.route,
    options.renderFault ?? defaultRenderFault,
    options.logger ?? silentLogger,
    options.events ?? {},
    options.connect ?? defaultConnect(settings.highWaterMark),
  );
  const servers: net.Server[] = [];
  const adoptSockets = options.adoptAcceptedSockets !== false;

  const handovers: ProtocolHandover[] = [];
  const handleConnection = (socket: net.Socket, secure = false, clientVersion?: string): void => {
    if (core.closing) {
      socket.destroy();
      return;
    }
    core.now = performance.now();
    core.startSweep();
    socket.setNoDelay(true);
    const conn = new SourceConnection(core, socket, secure);
    if (clientVersion !== undefined) conn.clientVersion = clientVersion;
  };
  /** Plain connections still being read for a handover's preface: close() ends them. */
  const sniffing = new Set<net.Socket>();
  /**
   * A plain connection's first bytes decide: the handover's preface, or HTTP/1.x (not adopted: it was read).
   * The preface is part of the request head, so header_timeout bounds the wait for it (slowloris defence);
   * a reset while it is read ends only that socket.
   */
  const sniff = (socket: net.Socket, h: ProtocolHandover, preface: Buffer): void => {
    let seen: Buffer = Buffer.alloc(0);
    const timer = setTimeout(() => socket.destroy(), settings.headerTimeout);
    const onError = (): void => void socket.destroy();
    const done = (): void => {
      clearTimeout(timer);
      sniffing.delete(socket);
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('close', done);
    };
    const onData = (chunk: Buffer): void => {
      seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
      const n = Math.min(seen.length, preface.length);
      const same = seen.subarray(0, n).equals(preface.subarray(0, n));
      if (same && n < preface.length) return;
      done();
      socket.pause();
      socket.unshift(seen);
      if (same) h.serve(socket);
      else {
        handleConnection(socket);
        socket.resume();
      }
    };
    sniffing.add(socket);
    socket.on('data', onData);
    socket.on('error', onError);
    socket.once('close', done);
    socket.resume();
  };

  return {
    settings,
    stats: core.stats,
    connections() {
      let idle = 0;
      for (const p of core.pools.values()) idle += p.idle.length;
      return { sources: core.sources.size, targets: core.targets.size, idleTargets: idle, inFlight: core.inFlight, queued: core.queued };
    },
    connectionStates() {
      const sources = [0, 0, 0, 0, 0, 0, 0, 0, 0];
      const targets = [0, 0, 0, 0, 0, 0, 0, 0, 0];
      for (const c of core.sources) sources[c.state] = (sources[c.state] ?? 0) + 1;
      for (const c of core.targets) targets[c.state] = (targets[c.state] ?? 0) + 1;
      return { sources, targets };
    },
    pools() {
      const out: PoolInfo[] = [];
      for (const p of core.pools.values() as Iterable<RoutePool>) {
        const f = p.lastFailure;
        out.push({
          key: p.endpoint.key,
          open: p.total,
          idle: p.idle.length,
          waiting: p.waiters.length,
          max: settings.maxConnectionsPerRoute,
          inUse: p.total - p.idle.length,
          failures: p.failures,
          ...(f !== undefined
            ? { lastError: { code: f.code, base: f.base, state: f.state, reason: f.reason, cause: f.cause, at: p.lastFailureAt } }
            : {}),
        });
      }
      return out;
    },
    sourcesByPort() {
      const out = new Map<number, number>();
      for (const c of core.sources) {
        const port = c.socket.localPort;
        if (port !== undefined) out.set(port, (out.get(port) ?? 0) + 1);
      }
      return out;
    },
    handleConnection,
    tunnels: () => [...core.tunnels],
    tunnelsUpgrades: true,
    listenTls(opts, tlsOptions) {
      return new Promise((resolve, reject) => {
        // Not half-open, unlike the plain listener: a client that gives up during the handshake (it refused
        // the certificate) only closes its TCP side, and a half-open server socket would then wait for a
        // handshake that never comes, holding close() up. The handshake counts as part of the request
        // head: header_timeout bounds it (slowloris defence).
        // With a handover the choice is made once per connection, by the protocol ALPN agreed on (RFC 7301
        // §3.2); a client that offered no ALPN or picked http/1.1 gets the HTTP/1.1 path as without one.
        const h = opts.handover;
        if (h !== undefined && !handovers.includes(h)) handovers.push(h);
        const alpn = h !== undefined ? { ALPNProtocols: [h.alpn, 'http/1.1'] } : {};
        const onSecure =
          h === undefined
            ? (socket: tls.TLSSocket) => handleConnection(socket, true)
            : (socket: tls.TLSSocket) => (socket.alpnProtocol === h.alpn ? h.serve(socket) : handleConnection(socket, true));
        const server = tls.createServer(
          {
            handshakeTimeout: settings.headerTimeout,
            ...tlsOptions,
            ...alpn,
            allowHalfOpen: false,
            noDelay: true,
            highWaterMark: settings.highWaterMark,
          } as tls.TlsOptions,
          onSecure,
        );
        // A failed handshake (wrong protocol, refused client certificate) never becomes a connection.
        server.on('tlsClientError', (err: NodeJS.ErrnoException, socket: tls.TLSSocket) => {
          if (options.logger?.enabled('info') === true)
            options.logger.log('info', 'tls_client_error', { code: err.code, message: err.message, remote: socket.remoteAddress });
          socket.destroy();
        });
        if (settings.maxOpenConnections > 0) server.maxConnections = settings.maxOpenConnections;
        server.once('error', reject);
        server.listen({ port: opts.port, host: opts.host ?? '0.0.0.0', backlog: opts.backlog ?? 511 }, () => {
          server.off('error', reject);
          servers.push(server);
          resolve(server);
        });
      });
    },
    listen(opts) {
      return new Promise((resolve, reject) => {
        // allowHalfOpen: a client that half-closes after its request still gets its response.
        // pauseOnConnect: nothing is read before adopt() gives the socket its own read buffer.
        // max_open_connections: this listener's open connections, counted here because an adopted
        // connection leaves Node's own count (server.maxConnections) as soon as it is adopted.
        const max = settings.maxOpenConnections;
        let open = 0;
        const h = opts.handover?.preface !== undefined ? opts.handover : undefined;
        if (h !== undefined && !handovers.includes(h)) handovers.push(h);
        const server = net.createServer(
          { allowHalfOpen: true, noDelay: true, pauseOnConnect: true, highWaterMark: settings.highWaterMark },
          (socket) => {
            if (core.closing || (max > 0 && open >= max)) {
              socket.destroy();
              return;
            }
            if (h !== undefined) {
              // Prior knowledge (RFC 9113 §3.3): the first bytes tell; such sockets are not adopted.
              if (max > 0) {
                open++;
                socket.once('close', () => void open--);
              }
              sniff(socket, h, h.preface as Buffer);
              return;
            }
            const adopted = adoptSockets ? adopt(socket, settings.highWaterMark) : undefined;
            if (max > 0) {
              open++;
              (adopted?.socket ?? socket).once('close', () => void open--);
            }
            if (adopted === undefined) {
              socket.resume();
              handleConnection(socket);
              return;
            }
            core.now = performance.now();
            core.startSweep();
            new SourceConnection(core, adopted.socket, false, adopted.adoption);
          },
        );
        server.once('error', reject);
        server.listen({ port: opts.port, host: opts.host ?? '0.0.0.0', backlog: opts.backlog ?? 511 }, () => {
          server.off('error', reject);
          servers.push(server);
          resolve(server.address() as net.AddressInfo);
        });
      });
    },
    async close() {
      const closed = servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())));
      servers.length = 0;
      for (const s of sniffing) s.destroy();
      const started = Date.now();
      const handed = handovers.splice(0).map((h) => h.close(settings.shutdownTimeout));
      await drainIdle(core, Math.min(DRAIN_IDLE_MS, settings.shutdownTimeout));
      await Promise.all(handed);
      await core.shutdown(Math.max(0, settings.shutdownTimeout - (Date.now() - started)));
      await Promise.all(closed);
    },
  };
}

export { targetFromUrl } from './types';
export type {
  TargetEndpoint,
  SourceRequest,
  WebSocketHooks,
  TunnelInfo,
  RouteDecision,
  ForwardDecision,
  RetryPolicy,
  LocalResponse,
  RouteFn,
  FaultRenderer,
  TransportEvents,
  ExchangeRecord,
  BodyRead,
  BufferedResponse,
  ResponseHook,
  Resend,
} from './types';
export { ProtocolState, STATE_NAMES, TRANSITIONS, stateName } from './states';
export { TransportBase, OwnCode, FAULT_KINDS, makeFault, faultJson, type TransportFault, type FaultReason, type Side } from './codes';
export { DEFAULT_TRANSPORT_SETTINGS, type TransportSettings } from './settings';
export type { TargetTls, ProxyRoute, Outbound } from './outbound';
