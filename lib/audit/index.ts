/**
 * The local security audit of an OpenAPI document (docs/security-audit.md): Spectral
 * (@stoplight/spectral-core) runs its `oas` ruleset and the OWASP API Security Top 10 2023 ruleset
 * (@stoplight/spectral-owasp-ruleset), both in their "recommended" severities, over a plain OpenAPI
 * document, and the findings give a score from 0 to 100 (`scoreOf`). A service with plain inputs: it
 * takes the document, never an API file or a call.
 *
 * Spectral and its rulesets are optional dependencies, required on the first audit (lib/config/packages.ts):
 * without them an audit throws PackageMissingError (PACKAGE_MISSING) naming the package to install.
 * No `$ref` outside the document is followed: the resolver has no reader for http(s) or files, so a
 * document cannot make the audit fetch a URL or read the host's files (such a reference is the finding
 * `invalid-ref`). Reports are kept per document hash (sha256 of its JSON) in an LRU; audits of the same
 * document at the same time share one run.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { LRUCache } from 'lru-cache';
import { load } from '../config/packages';
import { ThroughwayError } from '../errors';

/** Spectral's severities (its DiagnosticSeverity: 0 error ... 3 hint), by name. */
export const SEVERITIES = ['error', 'warning', 'info', 'hint'] as const;
export type Severity = (typeof SEVERITIES)[number];

/** Points one finding takes from 100, by severity (docs/security-audit.md, "The score"). */
export const WEIGHTS: Readonly<Record<Severity, number>> = { error: 10, warning: 3, info: 1, hint: 0 };
/** A rule's findings counted at most this many times: one rule broken on every operation does not alone make the score. */
export const MAX_COUNTED_PER_RULE = 3;

export interface AuditFinding {
  /** The rule's name as its ruleset spells it (`owasp:api8:2023-no-server-http`, `operation-operationId`). */
  readonly rule: string;
  /** `owasp` for the OWASP API Security ruleset's rules, `oas` for Spectral's OpenAPI ruleset and its parser. */
  readonly ruleset: 'owasp' | 'oas';
  readonly severity: Severity;
  readonly message: string;
  /** Where in the document: a JSON Pointer (RFC 6901), '' for the whole document. */
  readonly path: string;
}

export interface AuditReport {
  /** 0 to 100, from the findings' weights (`scoreOf`). */
  readonly score: number;
  /** In the document's order, as Spectral reports them. */
  readonly findings: readonly AuditFinding[];
  readonly counts: Readonly<Record<Severity, number>>;
  /** The linter and rulesets, with their installed versions. */
  readonly linter: string;
  /** sha256 (hex) of the audited document's JSON: the cache key. */
  readonly hash: string;
}

export type AuditErrorCode = 'AUDIT_DOCUMENT' | 'AUDIT_FAILED';

/**
 * An audit that gave no report: AUDIT_DOCUMENT, the document is not an OpenAPI 3 object (or cannot be
 * made into JSON); AUDIT_FAILED, the linter threw (a ruleset that does not load, a mismatched install).
 */
export class AuditError extends ThroughwayError {
  constructor(
    readonly code: AuditErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** What the audit uses of Spectral (@stoplight/spectral-core 1.x). */
interface SpectralDiagnostic {
  readonly code: string | number;
  readonly message: string;
  readonly path: readonly (string | number)[];
  readonly severity: number;
}
interface SpectralLike {
  setRuleset(ruleset: unknown): void;
  run(target: unknown): Promise<SpectralDiagnostic[]>;
}
interface SpectralCore {
  readonly Spectral: new (opts: { resolver: unknown }) => SpectralLike;
}
interface RefResolver {
  readonly Resolver: new (opts: { resolvers: Record<string, unknown> }) => unknown;
}

/** The packages of the audit, in the order they are required; PACKAGE_MISSING names the first one absent. */
export const AUDIT_PACKAGES = [
  '@stoplight/spectral-core',
  '@stoplight/spectral-ref-resolver',
  '@stoplight/spectral-rulesets',
  '@stoplight/spectral-owasp-ruleset',
] as const;

/** The key named in PACKAGE_MISSING: what asked for the packages. */
const ASKED_BY = "[security_audit] (the publisher's local audit, docs/security-audit.md)";

/** The installed version of a package: the package.json above its resolved main file (their `exports` hide package.json). */
function version(name: string): string {
  try {
    let dir = path.dirname(require.resolve(name));
    for (let i = 0; i < 5; i++, dir = path.dirname(dir)) {
      const file = path.join(dir, 'package.json');
      if (!fs.existsSync(file)) continue;
      const p = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
      if (p.name === name && typeof p.version === 'string') return p.version;
    }
  } catch {
    // A version is for people reading the report; the audit does not need it.
  }
  return '?';
}

/** Spectral with both rulesets set, and the line that names them. */
function makeLinter(): { spectral: SpectralLike; linter: string } {
  const core = load<SpectralCore>('@stoplight/spectral-core', ASKED_BY);
  const refs = load<RefResolver>('@stoplight/spectral-ref-resolver', ASKED_BY);
  const { oas } = load<{ oas: unknown }>('@stoplight/spectral-rulesets', ASKED_BY);
  const owasp = load<unknown>('@stoplight/spectral-owasp-ruleset', ASKED_BY);
  try {
    const spectral = new core.Spectral({ resolver: new refs.Resolver({ resolvers: {} }) });
    spectral.setRuleset({
      extends: [
        [oas, 'recommended'],
        [owasp, 'recommended'],
      ],
    });
    const linter = AUDIT_PACKAGES.map((p) => `${p}@${version(p)}`).join(', ');
    return { spectral, linter };
  } catch (err) {
    throw new AuditError('AUDIT_FAILED', `the audit's rulesets do not load: ${(err as Error).message}`, { cause: err });
  }
}

/** A path as a JSON Pointer (RFC 6901 §3: `~` as `~0`, `/` as `~1`). */
export function pointer(path: readonly (string | number)[]): string {
  return path.map((s) => `/${String(s).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

/**
 * The score of a list of findings: the points lost are, for each rule, its severity's weight (WEIGHTS)
 * times the number of its findings, counting at most MAX_COUNTED_PER_RULE of them; the score is
 * 100 × 100 / (100 + lost), rounded: 100 with no finding, 50 at 100 points lost, never quite 0, so two
 * weak documents still compare.
 */
export function scoreOf(findings: readonly Pick<AuditFinding, 'rule' | 'severity'>[]): number {
  const perRule = new Map<string, { severity: Severity; n: number }>();
  for (const f of findings) {
    const r = perRule.get(f.rule);
    if (r === undefined) perRule.set(f.rule, { severity: f.severity, n: 1 });
    else {
      r.n++;
      // A rule reported at two severities counts at its worst.
      if (WEIGHTS[f.severity] > WEIGHTS[r.severity]) r.severity = f.severity;
    }
  }
  let lost = 0;
  for (const r of perRule.values()) lost += WEIGHTS[r.severity] * Math.min(r.n, MAX_COUNTED_PER_RULE);
  return Math.round((100 * 100) / (100 + lost));
}

const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

export interface AuditorOptions {
  /** Reports kept (one per document hash); default 100. */
  readonly cacheSize?: number;
}

/** Audits documents, Spectral made once on the first audit, reports cached per document hash. */
export class Auditor {
  private linter: { spectral: SpectralLike; linter: string } | undefined;
  private readonly cache: LRUCache<string, AuditReport, string>;
  /** Runs (not cache hits) so far: what the cache saved is visible (docs/security-audit.md). */
  runs = 0;

  constructor(options: AuditorOptions = {}) {
    this.cache = new LRUCache<string, AuditReport, string>({
      max: options.cacheSize ?? 100,
      fetchMethod: (hash, _stale, { context }) => this.run(context, hash),
    });
  }

  /** The report of a document (an OpenAPI 3 object), from the cache when the same document was audited. */
  async audit(doc: unknown): Promise<AuditReport> {
    if (!isObj(doc) || typeof doc.openapi !== 'string' || !/^3\./.test(doc.openapi))
      throw new AuditError('AUDIT_DOCUMENT', 'the document is not an OpenAPI 3 object (its "openapi" field must be "3.x.y")');
    let text: string;
    try {
      text = JSON.stringify(doc);
    } catch (err) {
      throw new AuditError('AUDIT_DOCUMENT', `the document cannot be written as JSON: ${(err as Error).message}`, { cause: err });
    }
    const hash = createHash('sha256').update(text).digest('hex');
    const report = await this.cache.fetch(hash, { context: text });
    if (report === undefined) throw new AuditError('AUDIT_FAILED', 'the audit gave no report');
    return report;
  }

  private async run(text: string, hash: string): Promise<AuditReport> {
    this.linter ??= makeLinter();
    this.runs++;
    let diagnostics: SpectralDiagnostic[];
    try {
      // The JSON text, not the object: Spectral parses it itself, so paths and ranges are its own.
      diagnostics = await this.linter.spectral.run(text);
    } catch (err) {
      throw new AuditError('AUDIT_FAILED', `the linter failed: ${(err as Error).message}`, { cause: err });
    }
    const findings: AuditFinding[] = diagnostics.map((d) => {
      const rule = String(d.code);
      return {
        rule,
        ruleset: rule.startsWith('owasp:') ? 'owasp' : 'oas',
        severity: SEVERITIES[d.severity] ?? 'hint',
        message: d.message,
        path: pointer(d.path),
      };
    });
    const counts = { error: 0, warning: 0, info: 0, hint: 0 };
    for (const f of findings) counts[f.severity]++;
    return { score: scoreOf(findings), findings, counts, linter: this.linter.linter, hash };
  }
}
