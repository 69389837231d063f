/**
 * Backend host name verification (spec 001 [transport.passthru_https] sender.hostname_verifier): the
 * reference's three verifiers, as Node checkServerIdentity functions. The certificate chain is verified
 * against the sender trust store in every mode; these decide only whether the certificate names the host.
 *
 *  - Strict: RFC 6125 as Node does it (tls.checkServerIdentity): DNS names and IP addresses in
 *    subjectAltName, a wildcard matches exactly one left-most label (*.a.com: x.a.com, not x.y.a.com).
 *  - DefaultAndLocalhost (the default): as Default in the reference (browser-compatible: a wildcard may
 *    stand for several labels, *.a.com also matches x.y.a.com), and a backend addressed as localhost,
 *    localhost.localdomain, 127.0.0.1 or ::1 is accepted whatever name its certificate carries.
 *  - AllowAll: no name check (the chain is still verified). For tests and closed networks only.
 */
import * as tls from 'node:tls';

export const HOSTNAME_VERIFIERS = ['AllowAll', 'DefaultAndLocalhost', 'Strict'] as const;
export type HostnameVerifier = (typeof HOSTNAME_VERIFIERS)[number];

export type CheckServerIdentity = (host: string, cert: tls.PeerCertificate) => Error | undefined;

const LOCALHOST = new Set(['localhost', 'localhost.localdomain', '127.0.0.1', '::1']);

const allowAll: CheckServerIdentity = () => undefined;

const strict: CheckServerIdentity = (host, cert) => tls.checkServerIdentity(host, cert);

/** A DNS subjectAltName entry with a left-most wildcard matching several labels (browser-compatible). */
function wildcardMatches(pattern: string, host: string): boolean {
  if (!pattern.startsWith('*.')) return false;
  const suffix = pattern.slice(1).toLowerCase(); // ".a.com"
  // At least two labels after the wildcard: "*.com" never matches everything under a TLD.
  if (suffix.split('.').length < 3) return false;
  const h = host.toLowerCase();
  return h.endsWith(suffix) && h.length > suffix.length;
}

const defaultAndLocalhost: CheckServerIdentity = (host, cert) => {
  if (LOCALHOST.has(host)) return undefined;
  const err = tls.checkServerIdentity(host, cert);
  if (err === undefined) return undefined;
  const alt = cert.subjectaltname ?? '';
  for (const entry of alt.split(', ')) {
    if (entry.startsWith('DNS:') && wildcardMatches(entry.slice(4), host)) return undefined;
  }
  return err;
};

export function checkServerIdentityFor(mode: HostnameVerifier): CheckServerIdentity {
  switch (mode) {
    case 'AllowAll':
      return allowAll;
    case 'Strict':
      return strict;
    default:
      return defaultAndLocalhost;
  }
}
