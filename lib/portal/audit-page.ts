/**
 * The security audit of an API in the publisher (docs/security-audit.md), when `[security_audit]` is
 * written: a section of the API's page with the score and the findings, and
 * `GET /publisher/apis/{id}/audit`, the same report as JSON. The audited document is the one the API's
 * callers see: the API file's own OpenAPI document (`definition`) with the gateway URLs as its servers
 * (the developer portal's download, definition.ts), else one made from the API file (`apiFileDocument`).
 * The audit itself is lib/audit's; the hosted audit service of the reference is never called, and its
 * `api_token` is never read here.
 */
import type { ApiDefinition } from '../gateway/apis';
import { type AuditReport, AuditError, type Auditor } from '../audit';
import { PackageMissingError } from '../config/packages';
import { apiUrls, type CatalogueEntry } from './catalogue';
import type { Call } from './context';
import { apiDocument, forGateway } from './definition';
import { escapeHtml as h, PAGE_HEADERS } from './html';

/** Findings shown on the page at most (the JSON route returns them all). */
export const SHOWN_FINDINGS = 200;

type Obj = Record<string, unknown>;
type Gateways = readonly { readonly name: string; readonly url: string }[];

/**
 * The fault body the gateway answers (spec 002, part 7): `{"fault":{"code","type","message","description"}}`,
 * its code one of docs/faults.md's six-digit codes.
 */
const FAULT_SCHEMA = {
  type: 'object',
  properties: {
    fault: {
      type: 'object',
      properties: {
        code: { type: 'integer', format: 'int32', minimum: 0, maximum: 999999 },
        type: { type: 'string' },
        message: { type: 'string' },
        description: { type: 'string' },
      },
    },
  },
};
const fault = (description: string): Obj => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Fault' } } },
});

/**
 * An OpenAPI 3.0 document of an API file that names none: its resources as operations (methods, path
 * parameters of URI templates), the gateway URLs as servers, OAuth 2.0 (client credentials at the
 * gateway's /token) on the resources that need a token, with their scopes, and the faults the gateway
 * answers: 401 and 403 where a token is needed (docs/faults.md, 900901, 900910), 429 everywhere (throttling).
 */
export function apiFileDocument(api: ApiDefinition, gateways: Gateways): Obj {
  const servers = apiUrls(api, gateways);
  const paths: Record<string, Obj> = {};
  const scopes = new Map<string, string>(api.scopes.map((s) => [s.name, s.description ?? s.name]));
  let secured = false;
  for (const r of api.resources) {
    const item = (paths[r.path] ??= {});
    const params = [...r.path.matchAll(/\{([^}]+)\}/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    for (const m of r.methods) {
      const token = r.auth === 'oauth2' && api.auth === 'oauth2';
      if (token) secured = true;
      for (const s of r.scopes) if (!scopes.has(s)) scopes.set(s, s);
      item[m.toLowerCase()] = {
        ...(params.length > 0 ? { parameters: params } : {}),
        security: token ? [{ OAuth2: [...r.scopes] }] : [],
        responses: {
          '200': { description: "The backend's answer" },
          ...(token ? { '401': fault('No valid access token'), '403': fault('The token lacks a scope of the resource') } : {}),
          '429': fault('Throttled'),
        },
      };
    }
  }
  const base = gateways[0]?.url.replace(/\/+$/, '');
  return {
    openapi: '3.0.3',
    info: { title: api.name, version: api.version, ...(api.description !== undefined ? { description: api.description } : {}) },
    servers: servers.map((s) => ({ url: s.url, description: s.name })),
    paths,
    components: {
      schemas: { Fault: FAULT_SCHEMA },
      ...(secured
        ? {
            securitySchemes: {
              OAuth2: {
                type: 'oauth2',
                flows: { clientCredentials: { tokenUrl: `${base ?? ''}/token`, scopes: Object.fromEntries(scopes) } },
              },
            },
          }
        : {}),
    },
  };
}

/** The document an API's audit reads, and where it comes from; or why there is none (AUDIT_DOCUMENT). */
function documentOf(e: CatalogueEntry, gateways: Gateways): { doc: Obj; from: string } {
  const api = e.api;
  if (api === undefined) throw new AuditError('AUDIT_DOCUMENT', `${e.id} does not validate: its API file is audited once it does`);
  if (api.type !== 'HTTP') throw new AuditError('AUDIT_DOCUMENT', `a ${api.type} API has no OpenAPI document to audit`);
  const d = apiDocument(api);
  if (d === undefined) return { doc: apiFileDocument(api, gateways), from: 'made from the API file (it names no OpenAPI document)' };
  if ('error' in d) throw new AuditError('AUDIT_DOCUMENT', `its OpenAPI document cannot be read: ${d.error}`);
  return { doc: forGateway(d.doc, apiUrls(api, gateways)), from: "the API file's OpenAPI document, with the gateway URLs as servers" };
}

type Outcome =
  | { readonly ok: true; readonly report: AuditReport; readonly from: string }
  | { readonly ok: false; readonly status: number; readonly code: string; readonly message: string; readonly package?: string };

async function auditOf(c: Call, e: CatalogueEntry, auditor: Auditor): Promise<Outcome> {
  try {
    const { doc, from } = documentOf(e, c.parts.gateways());
    const report = await auditor.audit(doc);
    c.parts.logger.log('info', 'publisher_audit', { api: e.id, score: report.score, findings: report.findings.length });
    return { ok: true, report, from };
  } catch (err) {
    if (err instanceof PackageMissingError)
      return { ok: false, status: 503, code: err.code, message: err.message, package: err.packageName };
    if (err instanceof AuditError) {
      c.parts.logger.log(err.code === 'AUDIT_FAILED' ? 'error' : 'info', 'publisher_audit_failed', {
        api: e.id,
        code: err.code,
        message: err.message,
      });
      return { ok: false, status: err.code === 'AUDIT_DOCUMENT' ? 422 : 500, code: err.code, message: err.message };
    }
    throw err;
  }
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The section of the API's page ('' when `[security_audit]` is not written or `global = false`). */
export async function auditSection(c: Call, e: CatalogueEntry): Promise<string> {
  const auditor = c.parts.audit;
  if (auditor === undefined) return '';
  const json = `<p><a href="/publisher/apis/${encodeURIComponent(e.id)}/audit">The audit as JSON</a></p>`;
  const o = await auditOf(c, e, auditor);
  const head = '<section aria-labelledby="security-audit"><h2 id="security-audit">Security audit</h2>';
  if (!o.ok) return `${head}<p class="error" role="alert">${h(o.code)}: ${h(o.message)}</p>${json}</section>`;
  const r = o.report;
  const counts = `${plural(r.counts.error, 'error')}, ${plural(r.counts.warning, 'warning')}, ${r.counts.info} info, ${plural(r.counts.hint, 'hint')}`;
  const rows = r.findings
    .slice(0, SHOWN_FINDINGS)
    .map(
      (f) =>
        `<tr><td>${h(f.severity)}</td><td><code>${h(f.rule)}</code></td><td><code>${h(f.path || '/')}</code></td><td>${h(f.message)}</td></tr>`,
    )
    .join('\n');
  const more =
    r.findings.length > SHOWN_FINDINGS
      ? `<p class="hint">The first ${SHOWN_FINDINGS} of ${r.findings.length} findings; the JSON has all.</p>`
      : '';
  const table =
    r.findings.length === 0
      ? '<p>No findings.</p>'
      : `<div class="table"><table><thead><tr><th scope="col">Severity</th><th scope="col">Rule</th><th scope="col">Path</th><th scope="col">Message</th></tr></thead><tbody>${rows}</tbody></table></div>${more}`;
  return `${head}
<p>Score: <strong id="audit-score">${r.score}</strong> / 100 (${counts}).</p>
<p class="hint">Audited locally: ${h(o.from)}; OWASP API Security Top 10 2023 and OpenAPI rules (${h(r.linter)}). docs/security-audit.md says how the score is counted.</p>
${table}${json}</section>`;
}

/** `GET /publisher/apis/{id}/audit`: the report as JSON, or `{"error":{"code","message"}}` with its status. */
export async function auditRoute(c: Call, e: CatalogueEntry): Promise<void> {
  const auditor = c.parts.audit;
  const o: Outcome =
    auditor === undefined
      ? {
          ok: false,
          status: 404,
          code: 'AUDIT_OFF',
          message: 'the security audit is off: write [security_audit] in deployment.toml (docs/security-audit.md)',
        }
      : await auditOf(c, e, auditor);
  const body = o.ok
    ? { api: e.id, document: o.from, ...o.report }
    : { error: { code: o.code, message: o.message, ...(o.package !== undefined ? { package: o.package } : {}) } };
  const text = `${JSON.stringify(body, null, 2)}\n`;
  c.res.writeHead(o.ok ? 200 : o.status, {
    ...PAGE_HEADERS,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    ...(c.cookies.length > 0 ? { 'Set-Cookie': c.cookies } : {}),
  });
  c.res.end(text);
}
