/**
 * Certificates made in the test (node-forge via lib/tls/sample.ts), written to a temporary directory,
 * and a raw TLS client that reports what was negotiated.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tls from 'node:tls';
import forge from 'node-forge';
import { selfSigned, type SelfSigned } from '../../lib/tls/sample';

export const HOST = '127.0.0.1';

export interface Pki {
  readonly dir: string;
  readonly ca: SelfSigned;
  readonly otherCa: SelfSigned;
  /** Server certificate for localhost and 127.0.0.1, issued by `ca`. */
  readonly server: SelfSigned;
  /** Client certificate (CN=alice), issued by `ca`; one issued by `otherCa` (CN=mallory). */
  readonly client: SelfSigned;
  readonly strangerClient: SelfSigned;
  write(name: string, content: string | Buffer): string;
  cleanup(): void;
}

let cached: Omit<Pki, 'dir' | 'write' | 'cleanup'> | undefined;

/** One small PKI per test file (2048-bit keys: the least that OpenSSL 3 accepts at its default security level on Node 22 and later). */
export function makePki(): Pki {
  if (cached === undefined) {
    const ca = selfSigned('Test CA', [], { ca: true, bits: 2048 });
    const otherCa = selfSigned('Other CA', [], { ca: true, bits: 2048 });
    cached = {
      ca,
      otherCa,
      server: selfSigned('localhost', ['localhost', '127.0.0.1'], { issuer: ca, bits: 2048 }),
      client: selfSigned('alice', [], { issuer: ca, bits: 2048 }),
      strangerClient: selfSigned('mallory', [], { issuer: otherCa, bits: 2048 }),
    };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-tls-'));
  return {
    ...cached,
    dir,
    write(name, content) {
      const f = path.join(dir, name);
      fs.writeFileSync(f, content);
      return f;
    },
    cleanup() {
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A PKCS#12 file (DER) holding `pair`'s key and certificate, protected by `password`. */
export function pkcs12(pair: SelfSigned, password: string, chain: readonly SelfSigned[] = []): Buffer {
  const key = forge.pki.privateKeyFromPem(pair.keyPem);
  const certs = [pair, ...chain].map((p) => forge.pki.certificateFromPem(p.certPem));
  const asn1 = forge.pkcs12.toPkcs12Asn1(key, certs, password, { algorithm: '3des' });
  return Buffer.from(forge.asn1.toDer(asn1).getBytes(), 'binary');
}

/** A PKCS#12 trust store: certificates only. */
export function pkcs12Trust(certs: readonly SelfSigned[], password: string): Buffer {
  const asn1 = forge.pkcs12.toPkcs12Asn1(
    null,
    certs.map((p) => forge.pki.certificateFromPem(p.certPem)),
    password,
    { algorithm: '3des' },
  );
  return Buffer.from(forge.asn1.toDer(asn1).getBytes(), 'binary');
}

export interface TlsResult {
  readonly ok: boolean;
  readonly error?: string;
  readonly protocol?: string | null;
  readonly cipher?: string;
  readonly peerCN?: string;
  readonly response?: string;
}

/** Connects with TLS, sends `request` (if any) and collects the answer until the server closes or `ms`. */
export function tlsRequest(port: number, options: tls.ConnectionOptions, request?: string, ms = 3000): Promise<TlsResult> {
  return new Promise((resolve) => {
    let data = '';
    let done = false;
    const s = tls.connect({ host: HOST, port, servername: 'localhost', ...options });
    const finish = (r: TlsResult): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => finish(summary(true)), ms);
    // Read what was negotiated only on a live socket: a failed one has no TLS state left to ask.
    const summary = (ok: boolean, error?: string): TlsResult =>
      s.destroyed || error !== undefined
        ? { ok, ...(error !== undefined ? { error } : {}), response: data }
        : {
            ok,
            protocol: s.getProtocol(),
            cipher: s.getCipher()?.name,
            peerCN: (s.getPeerCertificate()?.subject as { CN?: string } | undefined)?.CN,
            response: data,
          };
    s.on('secureConnect', () => {
      if (request === undefined) finish(summary(true));
      else s.write(request);
    });
    s.on('data', (d: Buffer) => {
      data += d.toString('latin1');
      const end = data.indexOf('\r\n\r\n');
      if (end < 0) return;
      const cl = /content-length: (\d+)/i.exec(data.slice(0, end));
      if (cl !== null && data.length >= end + 4 + Number(cl[1])) finish(summary(true));
    });
    s.on('error', (err: NodeJS.ErrnoException) => finish(summary(false, err.code ?? err.message)));
    s.on('close', () => finish(summary(data !== '')));
  });
}

export function get(pathname = '/'): string {
  return `GET ${pathname} HTTP/1.1\r\nHost: localhost\r\n\r\n`;
}
