/**
 * SAML 2.0 bearer assertions as authorization grants (RFC 7522), checked with plain inputs: the
 * `assertion` parameter, the trusted identity providers, the audiences and recipients that name this
 * server, the time. A refusal is a value with a code (docs/key-manager.md, "SAML 2.0 bearer"); the grant
 * answers it as invalid_grant (RFC 7522 §3.1) with the code at the start of the description.
 *
 * Defences against XML signature wrapping: the document may hold one Assertion only, with no DOCTYPE
 * (no entities) and at most MAX_ASSERTION_BYTES; its own enveloped signature must reference its ID alone,
 * with RSA-SHA256, SHA-256 and exclusive c14n only; every value is then read from the XML the signature
 * covered (xml-crypto's getSignedReferences), never from the document as received.
 *
 * xml-crypto and @xmldom/xmldom are optional dependencies, loaded on the first assertion
 * (lib/config/packages.ts).
 */
import * as fs from 'node:fs';
import { LRUCache } from 'lru-cache';
import { load } from '../config/packages';
import { pemCertificates } from '../config/stores';
import type { DeploymentConfig } from '../config/deployment-config.generated';
import { ThroughwayError } from '../errors';

/** A decoded assertion larger than this is refused before parsing (32 KiB: a signed assertion with attributes is a few KiB; the form body limit is 64 KiB). */
export const MAX_ASSERTION_BYTES = 32 * 1024;
/** Assertion IDs kept against replay (RFC 7522 §3 item 8) until their NotOnOrAfter; when full of live ones, assertions are refused. */
export const REPLAY_CACHE_ENTRIES = 100_000;

const NS_ASSERTION = 'urn:oasis:names:tc:SAML:2.0:assertion';
const NS_PROTOCOL = 'urn:oasis:names:tc:SAML:2.0:protocol';
const NS_DSIG = 'http://www.w3.org/2000/09/xmldsig#';
const BEARER = 'urn:oasis:names:tc:SAML:2.0:cm:bearer';
const RSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';
const SHA256 = 'http://www.w3.org/2001/04/xmlenc#sha256';
const EXC_C14N = 'http://www.w3.org/2001/10/xml-exc-c14n#';
const ENVELOPED = 'http://www.w3.org/2000/09/xmldsig#enveloped-signature';

export type SamlRefusalCode =
  | 'SAML_MALFORMED'
  | 'SAML_TOO_LARGE'
  | 'SAML_DOCTYPE'
  | 'SAML_ISSUER'
  | 'SAML_UNSIGNED'
  | 'SAML_SIGNATURE'
  | 'SAML_WRAPPED'
  | 'SAML_AUDIENCE'
  | 'SAML_RECIPIENT'
  | 'SAML_SUBJECT'
  | 'SAML_EXPIRED'
  | 'SAML_NOT_YET_VALID'
  | 'SAML_REPLAYED'
  /** Answered by the grant (oauth.ts), not this module: the NameID names a user of another tenant than the client's. */
  | 'SAML_TENANT';

export interface SamlRefusal {
  readonly ok: false;
  readonly code: SamlRefusalCode;
  readonly reason: string;
}

export interface SamlAccepted {
  readonly ok: true;
  readonly issuer: string;
  /** The Subject's NameID. */
  readonly subject: string;
  readonly id: string;
}

/** A trusted identity provider: `[[oauth.grant_type.saml_bearer.identity_provider]]`. */
export interface SamlIdentityProvider {
  readonly issuer: string;
  /** The certificates of its certificate_file (several during a key rollover). */
  readonly certificates: readonly string[];
  readonly audience?: string;
}

/** An identity provider table that cannot be used at start: code SAML_IDP_CONFIG (docs/operations.md). */
export class SamlConfigError extends ThroughwayError {
  readonly code = 'SAML_IDP_CONFIG';
}

/** The identity providers of the configuration, their certificate files read (PEM, one or more certificates). */
export function samlIdentityProviders(config: DeploymentConfig): SamlIdentityProvider[] {
  const out: SamlIdentityProvider[] = [];
  const section = config.oauth.grant_type.saml_bearer;
  section.identity_provider.forEach((p, i) => {
    const at = `[[oauth.grant_type.saml_bearer.identity_provider]] #${i + 1}`;
    if (p.issuer === undefined || p.certificate_file === undefined) throw new SamlConfigError(`${at} needs issuer and certificate_file`);
    let text: string;
    try {
      text = fs.readFileSync(p.certificate_file, 'utf8');
    } catch (err) {
      throw new SamlConfigError(`${at} certificate_file ${p.certificate_file}: ${(err as Error).message}`);
    }
    const { certificates: pems, problem } = pemCertificates(text);
    if (problem !== undefined) throw new SamlConfigError(`${at} certificate_file ${p.certificate_file} ${problem}`);
    out.push({ issuer: p.issuer, certificates: pems, ...(p.audience !== undefined ? { audience: p.audience } : {}) });
  });
  return out;
}

const refuse = (code: SamlRefusalCode, reason: string): SamlRefusal => ({ ok: false, code, reason });

/*
 * The parts of xml-crypto and @xmldom/xmldom used here, typed locally: their declaration files pull in
 * TypeScript's DOM library, whose globals (Headers, fetch) would replace Node's in the whole program.
 */
interface Verifier {
  loadSignature(signature: unknown): void;
  checkSignature(xml: string): boolean;
  getSignedReferences(): string[];
}
interface Libs {
  readonly DOMParser: new (o: { errorHandler: Record<'warning' | 'error' | 'fatalError', (m: string) => void> }) => {
    parseFromString(xml: string, type: string): unknown;
  };
  readonly SignedXml: new (o: { publicCert: string; getCertFromKeyInfo: () => null }) => Verifier;
}

let libs: Libs | undefined;
function xmlLibs(): Libs {
  if (libs === undefined) {
    const key = '[oauth.grant_type.saml_bearer] enable';
    const dom = load<Pick<Libs, 'DOMParser'>>('@xmldom/xmldom', key);
    const crypto = load<Pick<Libs, 'SignedXml'>>('xml-crypto', key);
    libs = { DOMParser: dom.DOMParser, SignedXml: crypto.SignedXml };
  }
  return libs;
}

/** The DOM this module reads: @xmldom/xmldom's nodes, by their W3C properties. */
interface El {
  readonly nodeType: number;
  readonly namespaceURI: string | null;
  readonly localName: string | null;
  readonly textContent: string | null;
  readonly firstChild: El | null;
  readonly nextSibling: El | null;
  getAttribute(name: string): string | null;
}
interface Doc {
  readonly documentElement: El | null;
  getElementsByTagNameNS(ns: string, name: string): { readonly length: number };
}

/** Parses XML, every parser warning and error fatal. Throws on malformed input. */
function parse(l: Libs, xml: string): { doc: Doc; root: El } {
  const fail = (m: string): never => {
    throw new SyntaxError(m);
  };
  const doc = new l.DOMParser({ errorHandler: { warning: fail, error: fail, fatalError: fail } }).parseFromString(
    xml,
    'text/xml',
  ) as unknown as Doc;
  const root = doc.documentElement;
  if (root === null) throw new SyntaxError('no document element');
  return { doc, root };
}

function children(e: El, ns: string, name: string): El[] {
  const out: El[] = [];
  for (let n = e.firstChild; n !== null; n = n.nextSibling)
    if (n.nodeType === 1 && n.namespaceURI === ns && n.localName === name) out.push(n);
  return out;
}

function child(e: El, ns: string, name: string): El | undefined {
  return children(e, ns, name)[0];
}

const text = (e: El | undefined): string => (e?.textContent ?? '').trim();

/** An xs:dateTime attribute in ms, undefined when absent, NaN when not a time. */
function instant(e: El, name: string): number | undefined {
  const v = e.getAttribute(name);
  if (v === null || v === '') return undefined;
  return /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(v) ? Date.parse(v) : NaN;
}

export interface SamlCheck {
  /** The `assertion` form parameter: base64url (base64 also read) of an Assertion or a Response holding one. */
  readonly assertion: string;
  readonly providers: readonly SamlIdentityProvider[];
  /** This server as an Audience and Recipient: its issuer and token endpoint URLs (RFC 7522 §3 items 2 and 3). */
  readonly endpoints: readonly string[];
  readonly now: number;
  /** Clock tolerance in ms ([oauth] timestamp_skew). */
  readonly skew: number;
}

/** Checks SAML 2.0 bearer assertions and remembers the IDs of those accepted until they expire. */
export class SamlAssertions {
  private readonly seen = new LRUCache<string, true>({ max: REPLAY_CACHE_ENTRIES });

  check(c: SamlCheck): SamlAccepted | SamlRefusal {
    if (c.assertion.length > Math.ceil((MAX_ASSERTION_BYTES * 4) / 3) + 4)
      return refuse('SAML_TOO_LARGE', `the assertion is larger than ${MAX_ASSERTION_BYTES} bytes`);
    if (!/^[A-Za-z0-9+/_-]+=*$/.test(c.assertion)) return refuse('SAML_MALFORMED', 'the assertion is not base64url (RFC 7522 §2.1)');
    const xml = Buffer.from(c.assertion, 'base64url').toString('utf8');
    if (Buffer.byteLength(xml) > MAX_ASSERTION_BYTES)
      return refuse('SAML_TOO_LARGE', `the assertion is larger than ${MAX_ASSERTION_BYTES} bytes`);
    // No DTD at all: entities are how XML bombs and external references get in.
    if (/<!DOCTYPE|<!ENTITY/i.test(xml))
      return refuse('SAML_DOCTYPE', 'the assertion has a DOCTYPE or entity declaration, which is refused');
    const l = xmlLibs();
    let doc: Doc;
    let root: El;
    try {
      ({ doc, root } = parse(l, xml));
    } catch (err) {
      return refuse('SAML_MALFORMED', `the assertion is not well-formed XML: ${(err as Error).message.split('\n')[0] ?? ''}`);
    }
    if (doc.getElementsByTagNameNS(NS_ASSERTION, 'EncryptedAssertion').length > 0)
      return refuse('SAML_MALFORMED', 'encrypted assertions are not read: send the assertion itself');
    let assertion: El | undefined;
    if (root.namespaceURI === NS_ASSERTION && root.localName === 'Assertion') assertion = root;
    else if (root.namespaceURI === NS_PROTOCOL && root.localName === 'Response') assertion = child(root, NS_ASSERTION, 'Assertion');
    if (assertion === undefined) return refuse('SAML_MALFORMED', 'the document is neither a SAML 2.0 Assertion nor a Response holding one');
    // RFC 7522 §2.1: a single assertion. A second one anywhere is how a wrapped document hides the signed one.
    const count = doc.getElementsByTagNameNS(NS_ASSERTION, 'Assertion').length;
    if (count !== 1) return refuse('SAML_WRAPPED', `the document holds ${count} assertions; exactly one is read (RFC 7522 §2.1)`);
    const issuer = text(child(assertion, NS_ASSERTION, 'Issuer'));
    const idp = c.providers.find((p) => p.issuer === issuer);
    if (idp === undefined)
      return refuse(
        'SAML_ISSUER',
        `issuer ${JSON.stringify(issuer)} is not a trusted identity provider (add it as [[oauth.grant_type.saml_bearer.identity_provider]] issuer)`,
      );
    const id = assertion.getAttribute('ID') ?? '';
    if (id === '') return refuse('SAML_MALFORMED', 'the assertion has no ID');
    const sigs = children(assertion, NS_DSIG, 'Signature');
    if (sigs.length === 0) return refuse('SAML_UNSIGNED', 'the assertion is not signed (RFC 7522 §3 item 9)');
    if (sigs.length > 1 || doc.getElementsByTagNameNS(NS_DSIG, 'Signature').length > 2)
      return refuse('SAML_WRAPPED', "the document holds more signatures than the assertion's and the response's");
    const sig = sigs[0] as El;
    const algo = checkAlgorithms(sig, id);
    if (algo !== undefined) return algo;
    let signed: string | undefined;
    let lastError = '';
    for (const cert of idp.certificates) {
      const v = new l.SignedXml({ publicCert: cert, getCertFromKeyInfo: () => null });
      try {
        v.loadSignature(sig);
        if (v.checkSignature(xml)) {
          const refs = v.getSignedReferences();
          if (refs.length === 1) signed = refs[0];
          break;
        }
        lastError = 'a reference does not match its digest';
      } catch (err) {
        lastError = (err as Error).message;
      }
    }
    if (signed === undefined)
      return refuse('SAML_SIGNATURE', `the signature does not verify with the certificate of ${issuer}: ${lastError.slice(0, 200)}`);
    // Read everything from what the signature covered.
    let a: El;
    try {
      a = parse(l, signed).root;
    } catch {
      return refuse('SAML_WRAPPED', 'the signed part of the document is not an assertion');
    }
    if (a.namespaceURI !== NS_ASSERTION || a.localName !== 'Assertion' || a.getAttribute('ID') !== id)
      return refuse('SAML_WRAPPED', 'the signed element is not the assertion read');
    return this.conditions(a, idp, c, issuer, id);
  }

  private conditions(a: El, idp: SamlIdentityProvider, c: SamlCheck, issuer: string, id: string): SamlAccepted | SamlRefusal {
    if (a.getAttribute('Version') !== '2.0') return refuse('SAML_MALFORMED', 'the assertion is not SAML 2.0 (Version="2.0")');
    if (text(child(a, NS_ASSERTION, 'Issuer')) !== issuer) return refuse('SAML_WRAPPED', 'the signed Issuer is not the one read');
    const accepted = new Set([...c.endpoints, ...(idp.audience !== undefined ? [idp.audience] : [])]);
    const named = [...accepted].join(', ');
    const issued = instant(a, 'IssueInstant');
    if (issued === undefined || Number.isNaN(issued)) return refuse('SAML_MALFORMED', 'the assertion has no IssueInstant');
    if (issued > c.now + c.skew)
      return refuse('SAML_NOT_YET_VALID', 'the assertion was issued in the future (IssueInstant beyond [oauth] timestamp_skew)');
    // RFC 7522 §3 item 2; SAML core §2.5.1.4: every AudienceRestriction must name this server.
    const cond = child(a, NS_ASSERTION, 'Conditions');
    const restrictions = cond === undefined ? [] : children(cond, NS_ASSERTION, 'AudienceRestriction');
    if (restrictions.length === 0)
      return refuse('SAML_AUDIENCE', 'the assertion has no Conditions/AudienceRestriction (RFC 7522 §3 item 2)');
    for (const r of restrictions) {
      const audiences = children(r, NS_ASSERTION, 'Audience').map((e) => text(e));
      if (!audiences.some((x) => accepted.has(x)))
        return refuse(
          'SAML_AUDIENCE',
          `Audience ${JSON.stringify(audiences.join(' '))} names neither this token endpoint nor the identity provider's audience (${named})`,
        );
    }
    let expiry: number | undefined;
    if (cond !== undefined) {
      const nb = instant(cond, 'NotBefore');
      const na = instant(cond, 'NotOnOrAfter');
      if (Number.isNaN(nb) || Number.isNaN(na)) return refuse('SAML_MALFORMED', 'Conditions NotBefore or NotOnOrAfter is not a dateTime');
      if (nb !== undefined && nb > c.now + c.skew)
        return refuse('SAML_NOT_YET_VALID', 'the assertion is not valid yet (Conditions NotBefore)');
      if (na !== undefined && na <= c.now - c.skew) return refuse('SAML_EXPIRED', 'the assertion has expired (Conditions NotOnOrAfter)');
      expiry = na;
    }
    // RFC 7522 §3 item 3: a bearer SubjectConfirmation whose data names this server and has not expired.
    const subject = child(a, NS_ASSERTION, 'Subject');
    const nameId = text(subject === undefined ? undefined : child(subject, NS_ASSERTION, 'NameID'));
    if (subject === undefined || nameId === '') return refuse('SAML_SUBJECT', 'the assertion has no Subject NameID (RFC 7522 §3 item 3)');
    const bearers = children(subject, NS_ASSERTION, 'SubjectConfirmation').filter((s) => s.getAttribute('Method') === BEARER);
    if (bearers.length === 0) return refuse('SAML_SUBJECT', `the Subject has no SubjectConfirmation with Method ${BEARER}`);
    let why: SamlRefusal | undefined;
    let confirmedUntil: number | undefined;
    for (const b of bearers) {
      const d = child(b, NS_ASSERTION, 'SubjectConfirmationData');
      if (d === undefined) {
        why ??= refuse('SAML_SUBJECT', 'the bearer SubjectConfirmation has no SubjectConfirmationData');
        continue;
      }
      const recipient = d.getAttribute('Recipient') ?? '';
      if (!accepted.has(recipient)) {
        why = refuse(
          'SAML_RECIPIENT',
          `SubjectConfirmationData Recipient ${JSON.stringify(recipient)} is not this token endpoint (${named})`,
        );
        continue;
      }
      const until = instant(d, 'NotOnOrAfter');
      if (until === undefined || Number.isNaN(until)) {
        why = refuse('SAML_SUBJECT', 'SubjectConfirmationData has no NotOnOrAfter (RFC 7522 §3 item 3)');
        continue;
      }
      if (until <= c.now - c.skew) {
        why = refuse('SAML_EXPIRED', 'the subject confirmation has expired (SubjectConfirmationData NotOnOrAfter)');
        continue;
      }
      if (instant(d, 'NotBefore') !== undefined) {
        // SAML 2.0 profiles §4.1.4.2: bearer confirmation data carries no NotBefore.
        why = refuse('SAML_SUBJECT', 'a bearer SubjectConfirmationData may not carry NotBefore (SAML 2.0 profiles §4.1.4.2)');
        continue;
      }
      confirmedUntil = until;
      break;
    }
    if (confirmedUntil === undefined) return why ?? refuse('SAML_SUBJECT', 'no bearer subject confirmation can be met');
    const until = Math.min(confirmedUntil, expiry ?? confirmedUntil) + c.skew;
    const key = `${issuer}\u0000${id}`;
    this.seen.purgeStale();
    if (this.seen.has(key)) return refuse('SAML_REPLAYED', `assertion ${id} of ${issuer} was already used (RFC 7522 §3 item 8)`);
    if (this.seen.size >= REPLAY_CACHE_ENTRIES)
      return refuse('SAML_REPLAYED', `${REPLAY_CACHE_ENTRIES} unexpired assertions are remembered already; try again when some expire`);
    this.seen.set(key, true, { ttl: Math.max(1, until - c.now) });
    return { ok: true, issuer, subject: nameId, id };
  }
}

/** Only RSA-SHA256, SHA-256 digests and exclusive c14n, and one reference: to this assertion's ID. */
function checkAlgorithms(sig: El, id: string): SamlRefusal | undefined {
  const info = child(sig, NS_DSIG, 'SignedInfo');
  if (info === undefined) return refuse('SAML_SIGNATURE', 'the signature has no SignedInfo');
  const alg = (name: string, e: El | undefined): string => e?.getAttribute('Algorithm') ?? `(no ${name})`;
  const c14n = alg('CanonicalizationMethod', child(info, NS_DSIG, 'CanonicalizationMethod'));
  const method = alg('SignatureMethod', child(info, NS_DSIG, 'SignatureMethod'));
  if (c14n !== EXC_C14N) return refuse('SAML_SIGNATURE', `canonicalization ${c14n} is not accepted: exclusive c14n (${EXC_C14N}) only`);
  if (method !== RSA_SHA256) return refuse('SAML_SIGNATURE', `signature method ${method} is not accepted: ${RSA_SHA256} only`);
  const refs = children(info, NS_DSIG, 'Reference');
  if (refs.length !== 1) return refuse('SAML_WRAPPED', `the signature has ${refs.length} references; one, to the assertion, is read`);
  const ref = refs[0] as El;
  if (ref.getAttribute('URI') !== `#${id}`)
    return refuse('SAML_WRAPPED', `the signature references ${JSON.stringify(ref.getAttribute('URI'))}, not the assertion #${id}`);
  const digest = alg('DigestMethod', child(ref, NS_DSIG, 'DigestMethod'));
  if (digest !== SHA256) return refuse('SAML_SIGNATURE', `digest ${digest} is not accepted: ${SHA256} only`);
  const transforms = child(ref, NS_DSIG, 'Transforms');
  for (const tr of transforms === undefined ? [] : children(transforms, NS_DSIG, 'Transform')) {
    const a = tr.getAttribute('Algorithm') ?? '';
    if (a !== ENVELOPED && a !== EXC_C14N)
      return refuse('SAML_SIGNATURE', `transform ${a} is not accepted: enveloped-signature and exclusive c14n only`);
  }
  return undefined;
}
