/**
 * `throughway export api <name> <version>`: an API file of apis/ written back as a project of the
 * reference's CLI (api.yaml, deployment_environments.yaml, Definitions/, Endpoint-certificates/,
 * Client-certificates/), the inverse of lib/import/api.ts for every field that import writes, so a
 * project round-trips: import, export, import gives the same API file. Fields of the API file the
 * reference's format has no place for are listed, as an import lists what it leaves out.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { isTable, parseDocument } from '../config/document';
import { parseApiText } from '../gateway/apis';
import { listApiFiles } from '../gateway/deploy';
import { formatApiDiagnostic } from '../gateway/diagnostics';
import { ImportError } from './codes';
import type { Dropped } from './dropped';

type Rec = Record<string, unknown>;
const isRec = isTable;

/** The reference's format version the export writes (api.yaml `version`, as apictl 4.x writes it). */
export const EXPORT_FORMAT = 'v4.2.0';

export interface ApiExport {
  readonly base: string;
  /** Project files by name relative to the project's root. */
  readonly files: ReadonlyMap<string, Buffer>;
  readonly dropped: readonly Dropped[];
}

/** ms of a duration as the API file writes it: a number of ms, or "30s", "5m", "250ms". */
function ms(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  const m = typeof v === 'string' ? /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$/.exec(v.trim()) : null;
  if (m === null) return undefined;
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 'ms') as 'ms'];
}

/**
 * The API file of `name` and `version` in apisDir, parsed; with `validate`, refused (IMPORT_INVALID_API)
 * unless the gateway's validator accepts it, so an export reads only the documents a deployable API file
 * names (inside its directory).
 */
export function findApiFile(apisDir: string, name: string, version: string, validate = false): { file: string; doc: Rec } {
  for (const file of listApiFiles(apisDir) ?? []) {
    const text = fs.readFileSync(file, 'utf8');
    const parsed = parseDocument(text, file, { syntax: 'API_SYNTAX' });
    if (!parsed.ok || !isRec(parsed.doc) || parsed.doc.name !== name || String(parsed.doc.version) !== version) continue;
    const errors = validate ? parseApiText(text, file).diagnostics.filter((d) => d.level === 'error') : [];
    if (errors.length > 0)
      throw new ImportError('IMPORT_INVALID_API', file, `the API file does not validate: ${errors.map(formatApiDiagnostic).join('; ')}`);
    return { file, doc: parsed.doc };
  }
  throw new ImportError(
    'IMPORT_NOT_FOUND',
    apisDir,
    `no API file with name ${JSON.stringify(name)} and version ${JSON.stringify(version)}`,
  );
}

function readBeside(apiFile: string, rel: string): Buffer {
  const file = path.resolve(path.dirname(apiFile), rel);
  try {
    return fs.readFileSync(file);
  } catch (err) {
    throw new ImportError('IMPORT_IO', file, (err as Error).message);
  }
}

const SECURITY_EXPORTED = new Set(['type', 'username', 'password', 'grant_type', 'token_url', 'client_id', 'client_secret', 'parameters']);
const ENDPOINT_EXPORTED = new Set([
  'url',
  'timeout',
  'suspend_codes',
  'suspend_duration',
  'suspend_max_duration',
  'suspend_factor',
  'retry_codes',
  'retry_count',
  'security',
]);

function endpointOf(raw: unknown, where: string, dropped: Dropped[]): { ep: Rec; security: Rec | undefined } | undefined {
  if (raw === undefined) return undefined;
  const t: Rec = typeof raw === 'string' ? { url: raw } : isRec(raw) ? raw : {};
  const config: Rec = {};
  const duration = (k: string, v: unknown): void => {
    const n = ms(v);
    if (n !== undefined) config[k] = String(n);
  };
  duration('actionDuration', t.timeout);
  if (Array.isArray(t.suspend_codes) && t.suspend_codes.length > 0) config.suspendErrorCode = t.suspend_codes.map(String);
  duration('suspendDuration', t.suspend_duration);
  duration('suspendMaxDuration', t.suspend_max_duration);
  if (t.suspend_factor !== undefined) config.factor = String(t.suspend_factor);
  if (Array.isArray(t.retry_codes) && t.retry_codes.length > 0) config.retryErroCode = t.retry_codes.map(String);
  if (t.retry_count !== undefined) config.retryTimeOut = String(t.retry_count);
  for (const k of Object.keys(t))
    if (!ENDPOINT_EXPORTED.has(k))
      dropped.push({ path: `${where}.${k}`, why: "the reference's endpoint configuration has no such setting" });
  let security: Rec | undefined;
  if (isRec(t.security)) {
    const s = t.security;
    security = { enabled: true, type: String(s.type).toUpperCase() };
    if (s.username !== undefined) security.username = s.username;
    if (s.password !== undefined) security.password = s.password;
    if (s.type === 'oauth') {
      security.grantType = s.grant_type === 'password' ? 'PASSWORD' : 'CLIENT_CREDENTIALS';
      if (s.token_url !== undefined) security.tokenUrl = s.token_url;
      if (s.client_id !== undefined) security.clientId = s.client_id;
      if (s.client_secret !== undefined) security.clientSecret = s.client_secret;
      security.customParameters = isRec(s.parameters) ? s.parameters : {};
    }
    for (const k of Object.keys(s))
      if (!SECURITY_EXPORTED.has(k))
        dropped.push({ path: `${where}.security.${k}`, why: "the reference's endpoint security has no such setting" });
  }
  return { ep: { url: t.url, ...(Object.keys(config).length > 0 ? { config } : {}) }, security };
}

/** The reference's authType of a resource's auth and token_type. */
function authTypeOf(r: Rec): string {
  if (r.auth === 'none') return 'None';
  if (r.token_type === 'application') return 'Application';
  if (r.token_type === 'user') return 'Application User';
  return 'Application & Application User';
}

const API_EXPORTED = new Set([
  'name',
  'context',
  'version',
  'default_version',
  'state',
  'type',
  'auth',
  'mutual_ssl',
  'labels',
  'policy',
  'description',
  'definition',
  'endpoints',
  'cors',
  'scopes',
  'resources',
  'operations',
  'graphql',
]);
const RESOURCE_EXPORTED = new Set(['path', 'methods', 'auth', 'token_type', 'scopes', 'policy']);

/** The project of one API file. */
export function exportApi(apiFile: string, doc: Rec): ApiExport {
  const dropped: Dropped[] = [];
  const name = String(doc.name);
  const version = String(doc.version);
  const base = `${name}-${version}`.replace(/[^A-Za-z0-9._-]/g, '_');
  const type = typeof doc.type === 'string' ? doc.type : 'HTTP';
  const files = new Map<string, Buffer>();
  const at = (k: string): string => `${path.basename(apiFile)}:${k}`;
  for (const k of Object.keys(doc))
    if (!API_EXPORTED.has(k)) dropped.push({ path: at(k), why: "the reference's api.yaml has no such field" });

  const mtls = doc.mutual_ssl === 'mandatory' || doc.mutual_ssl === 'optional';
  const schemes: string[] = [];
  if (doc.auth !== 'none' || !mtls) schemes.push('oauth2');
  if (doc.auth !== 'none' && doc.mutual_ssl !== 'optional') schemes.push('oauth_basic_auth_api_key_mandatory');
  if (mtls) schemes.push('mutualssl');
  if (doc.mutual_ssl === 'mandatory') schemes.push('mutualssl_mandatory');
  if (doc.auth === 'none' && !mtls)
    dropped.push({
      path: at('auth'),
      why: 'the reference has no API without authentication: each operation is written with authType None',
    });

  const data: Rec = {
    name,
    context: doc.context,
    version,
    type,
    lifeCycleStatus: typeof doc.state === 'string' ? doc.state : 'PUBLISHED',
    isDefaultVersion: doc.default_version === true,
  };
  if (typeof doc.description === 'string') data.description = doc.description;
  data.apiThrottlingPolicy = typeof doc.policy === 'string' ? doc.policy : 'Unlimited';
  data.securityScheme = schemes;

  const endpointConfig: Rec = { endpoint_type: 'http' };
  const security: Rec = {};
  const eps = isRec(doc.endpoints) ? doc.endpoints : {};
  for (const kind of ['production', 'sandbox'] as const) {
    const e = endpointOf(eps[kind], at(`endpoints.${kind}`), dropped);
    if (e === undefined) continue;
    endpointConfig[`${kind}_endpoints`] = e.ep;
    security[kind] = e.security ?? { enabled: false };
  }
  if (Object.values(security).some((s) => isRec(s) && s.enabled === true)) endpointConfig.endpoint_security = security;
  data.endpointConfig = endpointConfig;

  const cors = isRec(doc.cors) ? doc.cors : undefined;
  data.corsConfiguration =
    cors !== undefined && cors.enable !== false
      ? {
          corsConfigurationEnabled: true,
          accessControlAllowOrigins: cors.allow_origins,
          accessControlAllowCredentials: cors.allow_credentials,
          accessControlAllowHeaders: cors.allow_headers,
          accessControlAllowMethods: cors.allow_methods,
        }
      : { corsConfigurationEnabled: false };
  for (const [k, v] of Object.entries(data.corsConfiguration as Rec)) if (v === undefined) delete (data.corsConfiguration as Rec)[k];

  data.scopes = (Array.isArray(doc.scopes) ? doc.scopes : []).filter(isRec).map((s) => ({
    scope: {
      name: s.name,
      displayName: s.name,
      ...(s.description !== undefined ? { description: s.description } : {}),
      bindings: Array.isArray(s.roles) ? s.roles : [],
    },
    shared: false,
  }));

  const operations: Rec[] = [];
  (Array.isArray(doc.resources) ? doc.resources : []).filter(isRec).forEach((r, i) => {
    for (const k of Object.keys(r))
      if (!RESOURCE_EXPORTED.has(k))
        dropped.push({ path: at(`resources[${i}].${k}`), why: "the reference's operations have no such field" });
    const methods = Array.isArray(r.methods) ? r.methods.map(String) : [];
    // A WebSocket API's resources are topics: one operation each, verb SUBSCRIBE (the reference's word).
    for (const m of type === 'WS' ? ['SUBSCRIBE'] : methods) {
      operations.push({
        target: r.path,
        verb: m,
        authType:
          doc.auth === 'none' && mtls
            ? 'Application & Application User'
            : authTypeOf({ ...r, auth: r.auth ?? (doc.auth === 'none' ? 'none' : undefined) }),
        throttlingPolicy: typeof r.policy === 'string' ? r.policy : 'Unlimited',
        scopes: Array.isArray(r.scopes) ? r.scopes : [],
      });
    }
  });
  (Array.isArray(doc.operations) ? doc.operations : []).filter(isRec).forEach((o) => {
    operations.push({
      target: o.name,
      verb: o.type,
      authType: 'Application & Application User',
      throttlingPolicy: typeof o.policy === 'string' ? o.policy : 'Unlimited',
      scopes: Array.isArray(o.scopes) ? o.scopes : [],
    });
  });
  data.operations = operations;

  if (typeof doc.definition === 'string')
    files.set(`Definitions/swagger${path.extname(doc.definition) === '.json' ? '.json' : '.yaml'}`, readBeside(apiFile, doc.definition));
  if (isRec(doc.graphql) && typeof doc.graphql.schema === 'string') {
    files.set('Definitions/schema.graphql', readBeside(apiFile, doc.graphql.schema));
    for (const k of Object.keys(doc.graphql))
      if (k !== 'schema')
        dropped.push({ path: at(`graphql.${k}`), why: 'the reference sets query limits per subscription tier, not per API' });
  }
  // The files an import wrote beside the API file: certificates, documents not named by it.
  const besideDir = path.join(path.dirname(apiFile), base);
  const walk = (dir: string, rel: string): void => {
    if (!fs.existsSync(dir)) return;
    for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const r = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) walk(path.join(dir, e.name), r);
      else if (e.isFile()) {
        const target = r.startsWith('endpoint-certificates/')
          ? `Endpoint-certificates/${r.slice('endpoint-certificates/'.length)}`
          : r.startsWith('client-certificates/')
            ? `Client-certificates/${r.slice('client-certificates/'.length)}`
            : /^(openapi|schema)\.[a-z]+$/.test(r)
              ? undefined
              : `Definitions/${r}`;
        if (target !== undefined && !files.has(target)) files.set(target, fs.readFileSync(path.join(dir, e.name)));
      }
    }
  };
  walk(besideDir, '');

  files.set('api.yaml', Buffer.from(stringify({ type: 'api', version: EXPORT_FORMAT, data })));
  const labels = Array.isArray(doc.labels) ? doc.labels.map(String) : ['Default'];
  files.set(
    'deployment_environments.yaml',
    Buffer.from(
      stringify({
        type: 'deployment_environments',
        version: EXPORT_FORMAT,
        data: labels.map((l) => ({ displayOnDevportal: true, deploymentEnvironment: l })),
      }),
    ),
  );
  files.set('api_meta.yaml', Buffer.from(stringify({ name, version })));
  return { base, files: new Map([...files].sort(([a], [b]) => (a < b ? -1 : 1))), dropped };
}
