/**
 * HTTP/2 sessions to gRPC backends (docs/grpc.md, "Backends"), pooled per endpoint: `http://` endpoints
 * speak h2c with prior knowledge (RFC 9113 §3.3), `https://` ones TLS with ALPN h2 (RFC 9113 §3.2), with the
 * endpoint's outbound TLS (its CA, SNI and identity check: docs/tls.md). A session carries many streams;
 * a new one is opened when every open session has as many streams as its peer allows (its
 * SETTINGS_MAX_CONCURRENT_STREAMS, at most MAX_STREAMS), up to MAX_SESSIONS per endpoint, past which
 * nghttp2 queues the stream until one closes. A session that closes, fails or receives GOAWAY is dropped
 * at once: the next call opens a fresh one.
 */
import * as http2 from 'node:http2';
import * as tls from 'node:tls';
import type { TargetEndpoint } from '../transport/types';

/** Streams per session at most, whatever the peer allows (nghttp2's default for servers is 100 as well). */
export const MAX_STREAMS = 100;
/** Sessions per endpoint at most. */
export const MAX_SESSIONS = 4;
/** A session without streams for this long is closed (ms). */
export const IDLE_MS = 60_000;

interface Pooled {
  readonly session: http2.ClientHttp2Session;
  active: number;
}

/**
 * The system or TLS error behind a stream's error when its session's connection failed (Node cancels the
 * session's pending streams with the connection's error as their cause); undefined for other errors.
 */
export function connectCause(err: unknown): string | undefined {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | undefined;
  const code = e?.cause?.code ?? e?.code;
  if (typeof code !== 'string' || code.startsWith('ERR_HTTP2')) return undefined;
  return code;
}

/** What a connection failure was, for its transport fault (docs/faults.md). */
export function connectReason(cause: string): 'connect_refused' | 'connect_timeout' | 'connect_failed' | 'tls_handshake' {
  if (cause === 'ECONNREFUSED') return 'connect_refused';
  if (cause === 'ETIMEDOUT') return 'connect_timeout';
  // System errors are E...; OpenSSL's verification results (UNABLE_TO_VERIFY_LEAF_SIGNATURE, ...) and
  // Node's TLS codes (ERR_TLS_CERT_ALTNAME_INVALID, ERR_SSL_...) are the handshake's.
  return /^E[A-Z]+$/.test(cause) ? 'connect_failed' : 'tls_handshake';
}

export class GrpcSessions {
  private readonly byKey = new Map<string, Pooled[]>();
  private closed = false;

  /** Sessions open now, per endpoint key (operations, tests). */
  sizes(): ReadonlyMap<string, number> {
    const out = new Map<string, number>();
    for (const [k, list] of this.byKey) out.set(k, list.length);
    return out;
  }

  /** A stream to `target` with these request fields (pseudo-fields included). */
  request(target: TargetEndpoint, headers: http2.OutgoingHttpHeaders): http2.ClientHttp2Stream {
    const p = this.pick(target);
    p.active++;
    const stream = p.session.request(headers, { endStream: false });
    stream.once('close', () => {
      p.active--;
    });
    return stream;
  }

  private pick(target: TargetEndpoint): Pooled {
    let list = this.byKey.get(target.key);
    if (list === undefined) {
      list = [];
      this.byKey.set(target.key, list);
    }
    let least: Pooled | undefined;
    for (const p of list) {
      if (p.session.destroyed || p.session.closed) continue;
      const allowed = Math.min(MAX_STREAMS, p.session.remoteSettings.maxConcurrentStreams ?? MAX_STREAMS);
      if (p.active < allowed) return p;
      if (least === undefined || p.active < least.active) least = p;
    }
    if (least !== undefined && list.length >= MAX_SESSIONS) return least;
    const p = this.open(target, list);
    return p;
  }

  private open(target: TargetEndpoint, list: Pooled[]): Pooled {
    const secure = target.tls !== undefined;
    const authority = `${secure ? 'https' : 'http'}://${target.host.includes(':') ? `[${target.host}]` : target.host}:${target.port}`;
    const t = target.tls;
    const options: http2.SecureClientSessionOptions =
      t === undefined
        ? {}
        : {
            createConnection: () => {
              const socket = tls.connect({
                host: target.host,
                port: target.port,
                secureContext: t.context,
                ...(t.servername !== undefined ? { servername: t.servername } : {}),
                checkServerIdentity: t.checkServerIdentity,
                ALPNProtocols: ['h2'],
              });
              // A backend that does not choose h2 cannot carry gRPC (RFC 9113 §3.2).
              socket.once('secureConnect', () => {
                if (socket.alpnProtocol !== 'h2') socket.destroy();
              });
              return socket;
            },
          };
    const session = http2.connect(authority, options);
    const p: Pooled = { session, active: 0 };
    list.push(p);
    const drop = (): void => {
      const i = list.indexOf(p);
      if (i >= 0) list.splice(i, 1);
    };
    session.on('error', drop);
    session.once('close', drop);
    session.once('goaway', drop);
    session.setTimeout(IDLE_MS, () => {
      if (p.active === 0) {
        drop();
        session.close();
      }
    });
    if (this.closed) session.destroy();
    return p;
  }

  /** Closes every session (in-flight streams end first, RFC 9113 §6.8). */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.byKey.values()].flat();
    this.byKey.clear();
    await Promise.all(
      all.map(
        (p) =>
          new Promise<void>((resolve) => {
            if (p.session.destroyed) return resolve();
            const timer = setTimeout(() => p.session.destroy(), 5000);
            timer.unref();
            p.session.close(() => {
              clearTimeout(timer);
              resolve();
            });
          }),
      ),
    );
  }
}
