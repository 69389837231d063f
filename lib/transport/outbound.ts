/**
 * How a target socket is opened when the endpoint is not plain HTTP straight to the backend: TLS
 * (`https://` endpoints: trust store, client certificate, host name verifier, SNI, session reuse) and
 * outbound HTTP proxies (`http://` through the proxy with an absolute-form request target, RFC 9112
 * §3.2.2; `https://` through a CONNECT tunnel, RFC 9110 §9.3.6). The plain path never comes here.
 */
import * as net from 'node:net';
import * as tls from 'node:tls';
import { Duplex } from 'node:stream';
import type { CheckServerIdentity } from './verify';
import { ThroughwayError } from '../errors';

/** Outbound TLS of one endpoint, built once (targetFromUrl) and shared by all its connections. */
export interface TargetTls {
  /** Trust store (ca) and client certificate (sender.key_store), as one secure context. */
  readonly context: tls.SecureContext;
  /** SNI (RFC 6066 §3): the host name, never an IP address literal. */
  readonly servername: string | undefined;
  readonly checkServerIdentity: CheckServerIdentity;
}

/** An outbound HTTP proxy chosen for an endpoint (spec 001, proxy profiles and sender.http.proxyHost). */
export interface ProxyRoute {
  readonly host: string;
  readonly port: number;
  /** "Basic <base64 user:password>" for Proxy-Authorization (RFC 9110 §11.7.2), or undefined. */
  readonly authorization: string | undefined;
}

/** What targetFromUrl needs besides the URL for `https://` endpoints and proxies. */
export interface Outbound {
  /** The secure context and verifier for every `https://` endpoint. */
  readonly tls?: { readonly context: tls.SecureContext; readonly checkServerIdentity: CheckServerIdentity };
  /** For `wss://` endpoints, when a trust store of their own is configured ([transport.wss]); else `tls`. */
  readonly wssTls?: { readonly context: tls.SecureContext; readonly checkServerIdentity: CheckServerIdentity } | undefined;
  /** The proxy for a backend host, or undefined to connect directly. */
  proxyFor?(host: string, secure: boolean): ProxyRoute | undefined;
}

/** Options common to every TLS connect of an endpoint; `session` resumes the pool's last session. */
export function connectTls(
  host: string,
  port: number,
  t: TargetTls,
  session: Buffer | undefined,
  highWaterMark: number,
  socket?: Duplex,
): tls.TLSSocket {
  // TLSSocket hands highWaterMark to stream.Duplex like net.Socket does; @types/node omits it.
  const opts = {
    secureContext: t.context,
    checkServerIdentity: t.checkServerIdentity,
    rejectUnauthorized: true,
    highWaterMark,
  } as tls.ConnectionOptions;
  if (t.servername !== undefined) opts.servername = t.servername;
  if (session !== undefined) opts.session = session;
  if (socket !== undefined) opts.socket = socket;
  else {
    opts.host = host;
    opts.port = port;
  }
  // Host for checkServerIdentity when connecting over a tunnel socket.
  if (socket !== undefined) opts.host = host;
  const s = tls.connect(opts);
  s.setNoDelay(true);
  return s;
}

/** The error a proxy's refusal of CONNECT becomes (classified as 103081 by the target). */
export class ProxyError extends ThroughwayError {
  readonly code = 'EPROXY';
  constructor(message: string) {
    super(message);
    this.name = 'ProxyError';
  }
}

/**
 * A CONNECT tunnel through `proxy` to host:port, as a Duplex a TLS socket can run over. Bytes written
 * before the proxy's 2xx answer wait here; a non-2xx answer destroys the stream with a ProxyError.
 */
export class ConnectTunnel extends Duplex {
  private readonly raw: net.Socket;
  private established = false;
  private head = '';
  private pending: { chunk: Buffer; cb: (err?: Error | null) => void }[] = [];

  constructor(proxy: ProxyRoute, host: string, port: number) {
    super({ allowHalfOpen: false });
    const authority = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
    this.raw = net.connect({ host: proxy.host, port: proxy.port, noDelay: true });
    let req = `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n`;
    if (proxy.authorization !== undefined) req += `Proxy-Authorization: ${proxy.authorization}\r\n`;
    this.raw.write(req + '\r\n', 'latin1');
    this.raw.on('data', this.onData);
    this.raw.on('error', (err) => this.destroy(err));
    this.raw.on('end', () => this.push(null));
    this.raw.on('close', () => {
      if (!this.destroyed) this.destroy();
    });
    this.raw.once('connect', () => this.emit('rawConnected'));
  }

  private readonly onData = (chunk: Buffer): void => {
    if (this.established) {
      if (!this.push(chunk)) this.raw.pause();
      return;
    }
    this.head += chunk.toString('latin1');
    const end = this.head.indexOf('\r\n\r\n');
    if (end < 0) {
      if (this.head.length > 16384) this.destroy(new ProxyError('proxy answer head too large'));
      return;
    }
    const status = /^HTTP\/1\.[01] (\d{3})/.exec(this.head);
    const code = status === null ? 0 : Number(status[1]);
    if (code < 200 || code > 299) {
      this.destroy(new ProxyError(`proxy refused CONNECT: ${this.head.slice(0, this.head.indexOf('\r\n'))}`));
      return;
    }
    this.established = true;
    const rest = Buffer.from(this.head.slice(end + 4), 'latin1');
    this.head = '';
    if (rest.length > 0) this.push(rest);
    const queued = this.pending;
    this.pending = [];
    for (const q of queued) this.raw.write(q.chunk, q.cb);
  };

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (!this.established) {
      this.pending.push({ chunk, cb });
      return;
    }
    this.raw.write(chunk, cb);
  }

  override _read(): void {
    this.raw.resume();
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.raw.end(cb);
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.raw.destroy();
    for (const q of this.pending) q.cb(err ?? new ProxyError('tunnel closed'));
    this.pending = [];
    cb(err);
  }
}
