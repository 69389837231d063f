/**
 * Mutual TLS through a TLS-terminating load balancer ([apimgt.mutual_ssl], spec 002 part 5 rule 7): the
 * balancer checks the client's certificate in the handshake and passes it on in the header
 * `certificate_header` names (URL-encoded PEM when `client_certificate_encode`, as nginx's
 * $ssl_client_escaped_cert; otherwise PEM, PEM with its line breaks turned into spaces, or base64 DER).
 *
 * The gateway checks it again, since anyone who can reach the gateway directly could set the header:
 * within its validity period, and issued (signature checked) by a certificate of the trust store
 * ([throughway.security] client_trust_store, PEM), or being one of them. With
 * `enable_certificate_chain_validation` the header may carry intermediates after the client certificate;
 * each link must be a CA certificate within its validity period, signed by the next, up to a trusted one.
 */
import { X509Certificate } from 'node:crypto';
import * as fs from 'node:fs';
import type { Logger } from '../log';
import type { MutualSslSettings } from './settings';

export type CertificateCheck =
  | { readonly ok: true; readonly subject: string; readonly fingerprint: string; readonly notAfter: number }
  | { readonly ok: false; readonly missing: boolean; readonly reason: string };

const MISSING: CertificateCheck = Object.freeze({ ok: false, missing: true, reason: 'no client certificate' });
const PEM_BLOCK = /-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/g;
const MAX_CHAIN = 10;

/** Reads every certificate of a PEM bundle. */
export function readPemBundle(text: string): X509Certificate[] {
  const out: X509Certificate[] = [];
  for (const m of text.matchAll(PEM_BLOCK)) {
    const der = Buffer.from((m[1] ?? '').replace(/[^A-Za-z0-9+/=]/g, ''), 'base64');
    out.push(new X509Certificate(der));
  }
  return out;
}

/** The certificates a header value carries, first the client's. */
export function parseHeaderCertificates(value: string, urlEncoded: boolean): X509Certificate[] {
  let v = value.trim();
  if (urlEncoded || v.includes('%')) v = decodeURIComponent(v);
  if (v.includes('-----BEGIN CERTIFICATE-----')) return readPemBundle(v);
  return [new X509Certificate(Buffer.from(v.replace(/\s/g, ''), 'base64'))];
}

function within(c: X509Certificate, now: number): boolean {
  return Date.parse(c.validFrom) <= now && now <= Date.parse(c.validTo);
}

function signedBy(c: X509Certificate, issuer: X509Certificate): boolean {
  return c.checkIssued(issuer) && c.verify(issuer.publicKey);
}

export class ClientCertificates {
  private readonly anchors: X509Certificate[];
  private readonly anchorPrints: Set<string>;

  constructor(
    private readonly s: MutualSslSettings,
    logger: Logger,
  ) {
    let anchors: X509Certificate[] = [];
    if (s.trustStoreFile !== undefined) {
      try {
        anchors = readPemBundle(fs.readFileSync(s.trustStoreFile, 'latin1'));
        if (anchors.length === 0)
          logger.log('error', 'client_trust_store_empty', {
            file: s.trustStoreFile,
            message: 'no PEM certificate in [throughway.security] client_trust_store: no client certificate is trusted',
          });
      } catch (err) {
        // Trusting nothing is the safe failure: mutual-SSL APIs answer 900901 until the file is fixed.
        logger.log('error', 'client_trust_store_unreadable', { file: s.trustStoreFile, message: (err as Error).message });
      }
    }
    this.anchors = anchors;
    this.anchorPrints = new Set(anchors.map((a) => a.fingerprint256));
  }

  get trusted(): number {
    return this.anchors.length;
  }

  /** Checks the certificate in the request's fields (flat name/value pairs). */
  check(headers: readonly string[], now: number): CertificateCheck {
    const name = this.s.header;
    if (name === undefined) return MISSING;
    let value: string | undefined;
    for (let i = 0; i < headers.length; i += 2) {
      if ((headers[i] as string).length === name.length && (headers[i] as string).toLowerCase() === name) {
        value = headers[i + 1] as string;
        break;
      }
    }
    if (value === undefined || value.trim() === '') return MISSING;
    let certs: X509Certificate[];
    try {
      certs = parseHeaderCertificates(value, this.s.urlEncoded);
    } catch {
      return { ok: false, missing: false, reason: 'the client certificate cannot be read' };
    }
    const leaf = certs[0];
    if (leaf === undefined) return { ok: false, missing: false, reason: 'the client certificate cannot be read' };
    if (!within(leaf, now)) return { ok: false, missing: false, reason: 'the client certificate is expired or not yet valid' };
    const ok = { ok: true as const, subject: leaf.subject, fingerprint: leaf.fingerprint256, notAfter: Date.parse(leaf.validTo) };
    if (this.anchorPrints.has(leaf.fingerprint256)) return ok;
    const byAnchor = (c: X509Certificate): boolean => this.anchors.some((a) => within(a, now) && signedBy(c, a));
    if (byAnchor(leaf)) return ok;
    if (!this.s.chainValidation)
      return { ok: false, missing: false, reason: 'the client certificate is not issued by a trusted certificate' };
    let current = leaf;
    for (let depth = 0; depth < MAX_CHAIN; depth++) {
      const next = certs.find((c) => c !== current && c.ca && signedBy(current, c));
      if (next === undefined) break;
      if (!within(next, now))
        return { ok: false, missing: false, reason: 'a certificate of the client certificate chain is expired or not yet valid' };
      if (this.anchorPrints.has(next.fingerprint256) || byAnchor(next)) return ok;
      current = next;
    }
    return { ok: false, missing: false, reason: 'the client certificate chain does not lead to a trusted certificate' };
  }
}
