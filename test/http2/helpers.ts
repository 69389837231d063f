/**
 * A gateway built in code with HTTP/2 on its TLS listener (ALPN h2, http/1.1) and h2c on its plain one,
 * and a Node http2 client helper: each test's clients are real (node:http2, node:https, curl).
 */
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { embedded, type EmbeddedGateway } from '../embed/helpers';
import { makePki, type Pki } from '../tls/helpers';
import { http2Handover, DEFAULT_HTTP2_SETTINGS, type Http2Handover, type Http2Settings } from '../../lib/http2';
import type { GatewayOptions } from '../../lib/embed';

export { api, echoBackend, HOST } from '../embed/helpers';

export interface H2Gateway extends EmbeddedGateway {
  readonly pki: Pki;
  readonly handover: Http2Handover;
  /** HTTPS listener (h2 and http/1.1 by ALPN). */
  readonly tlsPort: number;
  /** Plain listener (HTTP/1.1, and h2c with prior knowledge). */
  readonly plainPort: number;
  close(): Promise<void>;
}

export async function h2Gateway(
  apis: readonly unknown[],
  over: Partial<Http2Settings> = {},
  toml = '',
  options: Partial<GatewayOptions> = {},
): Promise<H2Gateway> {
  const pki = makePki();
  const e = embedded(apis, options, toml);
  const handover = http2Handover(
    (s, secure, v) => e.gw.handleConnection(s, secure, v),
    { ...DEFAULT_HTTP2_SETTINGS, h2c: true, ...over },
    e.logger,
  );
  const server = await e.gw.listenTls({ port: 0, host: '127.0.0.1', handover }, { key: pki.server.keyPem, cert: pki.server.certPem });
  const plain = await e.gw.listen({ port: 0, host: '127.0.0.1', handover });
  return {
    ...e,
    pki,
    handover,
    tlsPort: (server.address() as AddressInfo).port,
    plainPort: plain.port,
    async close() {
      await e.gw.close();
      pki.cleanup();
    },
  };
}

export interface H2Answer {
  readonly status: number;
  readonly headers: http2.IncomingHttpHeaders;
  readonly body: Buffer;
  text(): string;
  json(): any;
}

/** A session to the gateway's HTTPS listener (ALPN h2), trusting the test CA. */
export function connect(g: H2Gateway, settings: http2.Settings = {}): http2.ClientHttp2Session {
  const s = http2.connect(`https://localhost:${g.tlsPort}`, { ca: g.pki.ca.certPem, settings });
  s.on('error', () => undefined);
  return s;
}

/** One request on a session; the whole answer. */
export function h2Request(
  session: http2.ClientHttp2Session,
  headers: http2.OutgoingHttpHeaders,
  body?: Buffer | string,
): Promise<H2Answer> {
  return new Promise((resolve, reject) => {
    const req = session.request(headers, { endStream: body === undefined });
    let status = 0;
    let got: http2.IncomingHttpHeaders = {};
    req.on('response', (h) => {
      got = h;
      status = Number(h[':status']);
    });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const b = Buffer.concat(chunks);
      resolve({ status, headers: got, body: b, text: () => b.toString('utf8'), json: () => JSON.parse(b.toString('utf8')) });
    });
    req.on('error', reject);
    if (body !== undefined) req.end(body);
  });
}
