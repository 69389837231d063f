/**
 * One API project of the reference's CLI (api.yaml or api.json, deployment_environments.yaml,
 * Definitions/, Endpoint-certificates/, Client-certificates/, ...) turned into an API file of
 * docs/apis.md and the files beside it, with the list of what the API file cannot hold
 * (lib/import/dropped.ts). Pure: it reads a Project in memory and returns texts; lib/import/write.ts
 * writes them. The mapping, field by field, is the table of docs/migrating.md ("Importing the
 * reference's projects").
 */
import { isTable } from '../config/document';
import { parseOpenApiText } from '../gateway/openapi-file';
import { HTTP_METHODS } from '../gateway/apis';
import { ImportError } from './codes';
import { leftOver, reasonFor, type Dropped } from './dropped';
import { parseProjectFile, type Project } from './project';

/** Types throughway serves, by the reference's names (api.yaml `type`). */
const SERVED_TYPES: Readonly<Record<string, 'HTTP' | 'WS' | 'GRAPHQL'>> = { HTTP: 'HTTP', SOAP: 'HTTP', WS: 'WS', GRAPHQL: 'GRAPHQL' };
/** Types refused by name: streaming and AsyncAPI APIs, and SOAP to REST (its mediation is generated XSLT). */
export const REFUSED_TYPES: Readonly<Record<string, string>> = {
  WEBSUB: 'WebSub (an AsyncAPI streaming API) is not served by throughway',
  SSE: 'Server-Sent Events (an AsyncAPI streaming API) are not served by throughway',
  WEBHOOK: 'webhooks (an AsyncAPI streaming API) are not served by throughway',
  ASYNC: 'AsyncAPI APIs over other protocols are not served by throughway',
  SOAPTOREST: "SOAP to REST needs the reference's generated mediation sequences, which are not run",
  MCP: 'MCP servers are not served by throughway',
};

/** Environment-specific values (apictl's api_params.yaml, `--params`): endpoints and their security. */
export interface EnvParams {
  readonly endpoints?: { readonly production?: { readonly url?: string }; readonly sandbox?: { readonly url?: string } };
  readonly security?: { readonly production?: Record<string, unknown>; readonly sandbox?: Record<string, unknown> };
}

export interface ApiImport {
  readonly name: string;
  readonly version: string;
  /** `<name>-<version>`: the API file is apis/<base>.toml, its documents under apis/<base>/. */
  readonly base: string;
  /** The API file as a plain object, in the order it is written. */
  readonly api: Record<string, unknown>;
  /** Files beside the API file, relative to apis/. */
  readonly files: ReadonlyMap<string, Buffer>;
  readonly dropped: readonly Dropped[];
}

type Rec = Record<string, unknown>;
const isRec = isTable;
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** Whether a list of names is the root of an API project. */
export const isApiRoot = (names: readonly string[]): boolean =>
  names.includes('api.yaml') || names.includes('api.json') || names.includes('api.yml');

/** The reference's operation authType -> resource auth and token_type. */
function authOf(authType: unknown): { auth?: 'none'; token_type?: 'application' | 'user' } {
  switch (authType) {
    case 'None':
      return { auth: 'none' };
    case 'Application':
      return { token_type: 'application' };
    case 'Application User':
      return { token_type: 'user' };
    default:
      return {};
  }
}

/** A file name safe inside apis/<base>/ (certificate aliases become file names). */
const safeName = (s: string): string => s.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_');

/** Reads the project's api.yaml and everything beside it. */
export function convertApi(project: Project, params: EnvParams | undefined): ApiImport {
  const dropped: Dropped[] = [];
  const apiName = ['api.yaml', 'api.yml', 'api.json'].find((n) => project.files.has(n));
  if (apiName === undefined)
    throw new ImportError('IMPORT_NOT_PROJECT', project.where, "no api.yaml or api.json: not an API project of the reference's CLI");
  const at = (p: string): string => `${project.where}/${p}`;
  const doc = parseProjectFile(project.files.get(apiName) as Buffer, at(apiName));
  if (!isRec(doc)) throw new ImportError('IMPORT_FIELD', at(apiName), 'the file is not a mapping');
  if (doc.type === 'api_product')
    throw new ImportError(
      'IMPORT_UNSUPPORTED_TYPE',
      at(`${apiName}:type`),
      'API products are not imported: import each API of the product',
    );
  const data = isRec(doc.data) ? doc.data : undefined;
  if (data === undefined)
    throw new ImportError(
      'IMPORT_FIELD',
      at(`${apiName}:data`),
      'no data mapping (an export of the reference 4.x CLI: type: api, data: ...)',
    );
  const read = new Set<string>();
  const field = (p: string): string => at(`${apiName}:data.${p}`);
  const take = (k: string): unknown => {
    read.add(k);
    return data[k];
  };
  const need = (k: string): string => {
    const v = take(k);
    if (typeof v === 'string' && v.trim() !== '') return v;
    if (typeof v === 'number') return String(v);
    throw new ImportError('IMPORT_FIELD', field(k), `${k} is required (a non-empty string)`);
  };

  const typeWord = String(take('type') ?? 'HTTP').toUpperCase();
  if (REFUSED_TYPES[typeWord] !== undefined)
    throw new ImportError('IMPORT_UNSUPPORTED_TYPE', field('type'), `type ${typeWord}: ${REFUSED_TYPES[typeWord]}`);
  const type = SERVED_TYPES[typeWord];
  if (type === undefined)
    throw new ImportError(
      'IMPORT_UNSUPPORTED_TYPE',
      field('type'),
      `type ${typeWord} is not one throughway serves (HTTP, SOAP, WS, GRAPHQL)`,
    );
  if (typeWord === 'SOAP')
    dropped.push({ path: field('type'), why: 'a SOAP API is served as a plain HTTP pass-through (its WSDL is not read)' });
  const name = need('name');
  const version = need('version');
  let context = need('context');
  // 3.x exports carry the version in the context (/pizzashack/1.0.0); the API file adds it itself.
  if (context.endsWith(`/${version}`) && !context.includes('{version}')) context = context.slice(0, -version.length - 1) || '/';
  const base = safeName(`${name}-${version}`);
  const api: Rec = { name, context, version };
  if (data.displayName === name) read.add('displayName');
  if (take('isDefaultVersion') === true) api.default_version = true;
  const state = str(take('lifeCycleStatus'))?.toUpperCase() ?? 'PUBLISHED';
  if (['PROTOTYPED', 'DEPRECATED', 'BLOCKED', 'RETIRED'].includes(state)) api.state = state;
  else if (state !== 'PUBLISHED')
    dropped.push({ path: field('lifeCycleStatus'), why: `${state} is not a state of the API file: imported as PUBLISHED (served)` });
  if (type !== 'HTTP') api.type = type;

  // securityScheme: oauth2, mutualssl, and whether each is mandatory (the reference's publisher words).
  const schemes = Array.isArray(take('securityScheme')) ? (data.securityScheme as unknown[]).map(String) : ['oauth2'];
  const oauth = schemes.includes('oauth2');
  const mtls = schemes.includes('mutualssl');
  const mtlsMandatory = schemes.includes('mutualssl_mandatory');
  const appMandatory = schemes.includes('oauth_basic_auth_api_key_mandatory');
  for (const [i, s] of schemes.entries()) {
    if (!['oauth2', 'mutualssl', 'mutualssl_mandatory', 'oauth_basic_auth_api_key_mandatory'].includes(s))
      dropped.push({ path: field(`securityScheme[${i}]`), why: `${s}: ${reasonFor('securityScheme')}` });
  }
  if (mtls && !oauth) {
    api.auth = 'none';
    api.mutual_ssl = 'mandatory';
  } else if (mtls && mtlsMandatory) {
    api.mutual_ssl = 'mandatory';
    if (!appMandatory)
      dropped.push({
        path: field('securityScheme'),
        why: 'OAuth2 optional next to mandatory mutual TLS cannot be written: both are required',
      });
  } else if (mtls && !appMandatory) api.mutual_ssl = 'optional';
  else if (mtls)
    dropped.push({
      path: field('securityScheme'),
      why: 'optional mutual TLS next to mandatory OAuth2: the token is required and the certificate not read',
    });

  const apiPolicy = str(take('apiThrottlingPolicy'));
  if (apiPolicy !== undefined && apiPolicy !== 'Unlimited') api.policy = apiPolicy;
  const description = str(take('description'));
  if (description !== undefined) api.description = description;

  // Labels: the gateway environments the API was deployed to (deployment_environments.yaml).
  const envFile = project.files.get('deployment_environments.yaml');
  if (envFile !== undefined) {
    const envs = parseProjectFile(envFile, at('deployment_environments.yaml'));
    const list = isRec(envs) && Array.isArray(envs.data) ? envs.data : [];
    const labels: string[] = [];
    list.forEach((e, i) => {
      if (!isRec(e) || str(e.deploymentEnvironment) === undefined) return;
      if (!labels.includes(e.deploymentEnvironment as string)) labels.push(e.deploymentEnvironment as string);
      if (str(e.vhost) !== undefined)
        dropped.push({
          path: at(`deployment_environments.yaml:data[${i}].vhost`),
          why: "the gateway's host name is [server] hostname, not a per-API virtual host",
        });
      if (e.displayOnDevportal === false)
        dropped.push({
          path: at(`deployment_environments.yaml:data[${i}].displayOnDevportal`),
          why: 'the developer portal lists every deployed API',
        });
    });
    if (labels.length > 0 && !(labels.length === 1 && labels[0] === 'Default')) api.labels = labels;
  }

  // Definitions: the OpenAPI document (REST), the GraphQL schema, an AsyncAPI document (WebSocket).
  const files = new Map<string, Buffer>();
  const defName = ['Definitions/swagger.yaml', 'Definitions/swagger.json', 'Definitions/swagger.yml'].find((n) => project.files.has(n));
  if (type === 'GRAPHQL') {
    const schema = project.files.get('Definitions/schema.graphql');
    if (schema === undefined)
      throw new ImportError('IMPORT_DEFINITION', at('Definitions/schema.graphql'), 'a GraphQL project needs its schema');
    files.set(`${base}/schema.graphql`, schema);
    api.graphql = { schema: `${base}/schema.graphql` };
  } else if (type === 'HTTP') {
    if (defName === undefined)
      throw new ImportError(
        'IMPORT_DEFINITION',
        at('Definitions/swagger.yaml'),
        'a REST project needs its OpenAPI or Swagger document (Definitions/swagger.yaml or swagger.json)',
      );
    const bytes = project.files.get(defName) as Buffer;
    const ext = defName.endsWith('.json') ? 'json' : 'yaml';
    const parsed = parseOpenApiText(bytes.toString('utf8'));
    if ('doc' in parsed) {
      files.set(`${base}/openapi.${ext}`, bytes);
      api.definition = `${base}/openapi.${ext}`;
    } else {
      files.set(`${base}/swagger.${ext}`, bytes);
      dropped.push({
        path: at(defName),
        why: `written to ${base}/swagger.${ext} and not named by the API file: ${parsed.error} (the API file's definition is OpenAPI 3; resources come from api.yaml operations)`,
      });
    }
  }
  for (const n of project.files.keys()) {
    if (!n.startsWith('Definitions/') || n === defName || n === 'Definitions/schema.graphql') continue;
    const keep = `${base}/${n.slice('Definitions/'.length).split('/').map(safeName).join('/')}`;
    files.set(keep, project.files.get(n) as Buffer);
    dropped.push({
      path: at(n),
      why: `written to ${keep}, not read by the gateway (${/asyncapi/i.test(n) ? 'a WebSocket API routes by its resources, not by an AsyncAPI document' : 'the API file names one OpenAPI document'})`,
    });
  }

  // Endpoints: one production and one sandbox endpoint with their advanced configuration and security.
  const ec = take('endpointConfig');
  if (str(data.endpointImplementationType) !== undefined && data.endpointImplementationType !== 'ENDPOINT') {
    throw new ImportError(
      'IMPORT_FIELD',
      field('endpointImplementationType'),
      `${String(data.endpointImplementationType)}: inline (mock) implementations have no backend to call`,
    );
  }
  read.add('endpointImplementationType');
  if (!isRec(ec)) throw new ImportError('IMPORT_FIELD', field('endpointConfig'), "endpointConfig is required (the API's backends)");
  const epType = String(ec.endpoint_type ?? 'http');
  if (!['http', 'address', 'load_balance', 'failover', 'ws', 'graphql'].includes(epType))
    throw new ImportError(
      'IMPORT_FIELD',
      field('endpointConfig.endpoint_type'),
      `${epType} endpoints are not served (http, address, load_balance, failover)`,
    );
  const endpoints: Rec = {};
  const ecRead = new Set<string>(['endpoint_type']);
  for (const kind of ['production', 'sandbox'] as const) {
    let raw = ec[`${kind}_endpoints`];
    ecRead.add(`${kind}_endpoints`);
    if (Array.isArray(raw)) {
      raw
        .slice(1)
        .forEach((_, i) =>
          dropped.push({ path: field(`endpointConfig.${kind}_endpoints[${i + 1}]`), why: reasonFor(`endpointConfig.${kind}_endpoints[]`) }),
        );
      raw = raw[0];
    }
    if (Array.isArray(ec[`${kind}_failovers`]) && (ec[`${kind}_failovers`] as unknown[]).length > 0) {
      ecRead.add(`${kind}_failovers`);
      dropped.push({ path: field(`endpointConfig.${kind}_failovers`), why: reasonFor(`endpointConfig.${kind}_failovers`) });
    }
    const override = params?.endpoints?.[kind]?.url;
    let url = override ?? (isRec(raw) ? str(raw.url) : undefined);
    if (url === undefined) continue;
    if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
      dropped.push({
        path: field(`endpointConfig.${kind}_endpoints.url`),
        why: `${JSON.stringify(url)} has no scheme: written as http://${url}`,
      });
      url = `http://${url}`;
    }
    // One trailing slash dropped: the backend URL is this URL followed by the resource path (docs/apis.md).
    if (url.endsWith('/')) url = url.slice(0, -1);
    const ep: Rec = { url };
    const config = isRec(raw) && isRec(raw.config) ? raw.config : {};
    const num = (k: string): number | undefined =>
      config[k] !== undefined && config[k] !== '' && Number.isFinite(Number(config[k])) ? Number(config[k]) : undefined;
    const codes = (k: string): number[] | undefined => {
      const v = config[k];
      const list = Array.isArray(v) ? v : typeof v === 'string' && v !== '' ? v.split(',') : [];
      const out = list.map((c) => Number(String(c).trim())).filter((c) => Number.isInteger(c) && c > 0);
      return out.length > 0 ? out : undefined;
    };
    const map: [string, string, number | number[] | undefined][] = [
      ['actionDuration', 'timeout', num('actionDuration')],
      ['suspendErrorCode', 'suspend_codes', codes('suspendErrorCode')],
      ['suspendDuration', 'suspend_duration', num('suspendDuration')],
      ['suspendMaxDuration', 'suspend_max_duration', num('suspendMaxDuration')],
      ['factor', 'suspend_factor', num('factor')],
      ['retryErroCode', 'retry_codes', codes('retryErroCode')],
      ['retryTimeOut', 'retry_count', num('retryTimeOut')],
    ];
    for (const [from, to, v] of map) if (v !== undefined) ep[to] = v;
    for (const [k, v] of Object.entries(config)) {
      if (map.some(([from, , val]) => from === k && val !== undefined) || v === '' || v === null) continue;
      dropped.push({
        path: field(`endpointConfig.${kind}_endpoints.config.${k}`),
        why: reasonFor(`endpointConfig.${kind}_endpoints.config.${k}`),
      });
    }
    if (isRec(raw))
      for (const k of Object.keys(raw))
        if (k !== 'url' && k !== 'config' && raw[k] !== '' && raw[k] !== null)
          dropped.push({ path: field(`endpointConfig.${kind}_endpoints.${k}`), why: reasonFor(`endpointConfig.${kind}_endpoints.${k}`) });
    const sec = securityOf(
      params?.security?.[kind] ?? (isRec(ec.endpoint_security) ? ec.endpoint_security[kind] : undefined),
      field(`endpointConfig.endpoint_security.${kind}`),
      base,
      kind,
      dropped,
    );
    if (sec !== undefined) ep.security = sec;
    endpoints[kind] = Object.keys(ep).length === 1 ? url : ep;
  }
  ecRead.add('endpoint_security');
  for (const k of Object.keys(ec))
    if (!ecRead.has(k) && ec[k] !== '' && ec[k] !== null)
      dropped.push({ path: field(`endpointConfig.${k}`), why: reasonFor(`endpointConfig.${k}`) });
  if (Object.keys(endpoints).length === 0)
    throw new ImportError('IMPORT_FIELD', field('endpointConfig'), 'neither production_endpoints nor sandbox_endpoints has a url');
  api.endpoints = endpoints;

  // CORS: the API's own configuration when it is enabled; otherwise [apim.cors] applies, as in the reference.
  const cors = take('corsConfiguration');
  if (isRec(cors) && cors.corsConfigurationEnabled === true) {
    const c: Rec = { enable: true };
    const list = (v: unknown): string[] | undefined => (Array.isArray(v) ? v.map(String) : undefined);
    if (list(cors.accessControlAllowOrigins) !== undefined) c.allow_origins = list(cors.accessControlAllowOrigins);
    if (list(cors.accessControlAllowMethods) !== undefined) c.allow_methods = list(cors.accessControlAllowMethods);
    if (list(cors.accessControlAllowHeaders) !== undefined) c.allow_headers = list(cors.accessControlAllowHeaders);
    if (typeof cors.accessControlAllowCredentials === 'boolean') c.allow_credentials = cors.accessControlAllowCredentials;
    api.cors = c;
  }

  // Scopes with the roles bound to them.
  const scopes = take('scopes');
  if (Array.isArray(scopes) && scopes.length > 0) {
    api.scopes = scopes.map((s, i) => {
      const sc = isRec(s) && isRec(s.scope) ? s.scope : {};
      const sname = str(sc.name);
      if (sname === undefined) throw new ImportError('IMPORT_FIELD', field(`scopes[${i}].scope.name`), 'a scope needs a name');
      const out: Rec = { name: sname };
      if (str(sc.description) !== undefined) out.description = sc.description;
      if (Array.isArray(sc.bindings) && sc.bindings.length > 0) out.roles = sc.bindings.map(String);
      if (str(sc.displayName) !== undefined && sc.displayName !== sname)
        dropped.push({ path: field(`scopes[${i}].scope.displayName`), why: reasonFor('scopes[].scope.displayName') });
      if (isRec(s) && s.shared === true) dropped.push({ path: field(`scopes[${i}].shared`), why: reasonFor('scopes[].shared') });
      return out;
    });
  }

  // Operations: resources (REST, WebSocket topics) or GraphQL operations, grouped by path and settings.
  const ops = take('operations');
  const opList = Array.isArray(ops) ? ops : [];
  const resources: Rec[] = [];
  const operations: Rec[] = [];
  const grouped = new Map<string, Rec>();
  opList.forEach((o, i) => {
    if (!isRec(o)) throw new ImportError('IMPORT_FIELD', field(`operations[${i}]`), 'an operation is a mapping');
    const target = str(o.target);
    const verb = str(o.verb)?.toUpperCase();
    if (target === undefined || verb === undefined)
      throw new ImportError('IMPORT_FIELD', field(`operations[${i}]`), 'an operation needs target and verb');
    const policy = str(o.throttlingPolicy);
    const opScopes = Array.isArray(o.scopes) ? o.scopes.map(String) : [];
    const settings: Rec = { ...authOf(o.authType) };
    if (opScopes.length > 0) settings.scopes = opScopes;
    if (policy !== undefined && policy !== 'Unlimited' && api.policy === undefined) settings.policy = policy;
    else if (policy !== undefined && policy !== 'Unlimited')
      dropped.push({
        path: field(`operations[${i}].throttlingPolicy`),
        why: 'the API-level policy applies: the API file ignores resource policies beside it, as the reference does',
      });
    if (type === 'GRAPHQL') {
      if (!['QUERY', 'MUTATION', 'SUBSCRIPTION'].includes(verb))
        throw new ImportError('IMPORT_FIELD', field(`operations[${i}].verb`), `${verb} is not a GraphQL operation type`);
      if (settings.auth === 'none' || settings.token_type !== undefined)
        dropped.push({
          path: field(`operations[${i}].authType`),
          why: "a GraphQL operation has no authentication of its own: the API's applies",
        });
      operations.push({
        type: verb,
        name: target,
        ...(settings.scopes !== undefined ? { scopes: settings.scopes } : {}),
        ...(settings.policy !== undefined ? { policy: settings.policy } : {}),
      });
    } else {
      const method = type === 'WS' ? 'GET' : verb;
      if (!(HTTP_METHODS as readonly string[]).includes(method))
        throw new ImportError(
          'IMPORT_FIELD',
          field(`operations[${i}].verb`),
          `${verb} is not an HTTP method of the API file (${HTTP_METHODS.join(', ')})`,
        );
      // Operations of one path with the same settings become one resource with several methods.
      const key = `${target} ${JSON.stringify(settings)}`;
      const same = grouped.get(key);
      if (same !== undefined) {
        if (!(same.methods as string[]).includes(method)) (same.methods as string[]).push(method);
      } else {
        const r: Rec = { path: target, methods: [method], ...settings };
        grouped.set(key, r);
        resources.push(r);
      }
    }
    const known = new Set(['target', 'verb', 'authType', 'throttlingPolicy', 'scopes', 'id', 'usedProductIds']);
    for (const [k, v] of Object.entries(o)) {
      if (known.has(k)) continue;
      if (k === 'operationPolicies' && isRec(v)) {
        for (const flow of ['request', 'response', 'fault']) {
          const list = Array.isArray(v[flow]) ? (v[flow] as unknown[]) : [];
          list.forEach((p, j) =>
            dropped.push({
              path: field(`operations[${i}].operationPolicies.${flow}[${j}]`),
              why: `${isRec(p) ? String(p.policyName ?? '') : ''}: ${reasonFor('operations[].operationPolicies')}`,
            }),
          );
        }
        continue;
      }
      for (const d of leftOver(v, new Set(), field(`operations[${i}].${k}`)))
        dropped.push({ path: d.path, why: reasonFor(`operations[].${k}`) });
    }
  });
  read.add('operations');
  if (resources.length === 0 && type !== 'GRAPHQL')
    throw new ImportError('IMPORT_FIELD', field('operations'), 'no operations: the API file needs at least one resource');
  if (resources.length > 0) api.resources = resources;
  if (operations.length > 0) api.operations = operations;

  // Everything of api.yaml not read above, and the project's other files.
  dropped.push(...leftOver(data, read, `${project.where}/${apiName}:data.`));
  certificates(project, base, files, dropped);
  for (const n of project.files.keys()) {
    if (
      n === apiName ||
      n === 'deployment_environments.yaml' ||
      n.startsWith('Definitions/') ||
      n.startsWith('Endpoint-certificates/') ||
      n.startsWith('Client-certificates/')
    )
      continue;
    if (n === 'api_meta.yaml') {
      const meta = parseProjectFile(project.files.get(n) as Buffer, at(n));
      dropped.push(...leftOver(meta, new Set(['name', 'version']), `${at(n)}:`));
      continue;
    }
    dropped.push({ path: at(n), why: fileReason(n) });
  }
  return { name, version, base, api, files, dropped };
}

/** Why a project file other than api.yaml, the definitions and the certificates is not carried. */
function fileReason(n: string): string {
  if (n.startsWith('Sequences/'))
    return "the reference's mediation sequences are not run (mediation here is a JavaScript script: docs/mediation.md)";
  if (n.startsWith('Policies/'))
    return "the reference's operation policies are not run (mediation here is a JavaScript script: docs/mediation.md)";
  if (n.startsWith('Docs/')) return 'API documents are not served by the developer portal here';
  if (n.startsWith('Image/')) return 'the developer portal shows no thumbnail';
  if (n.startsWith('Interceptors/') || n.startsWith('Endpoint-certificates/interceptors')) return 'interceptor services are not called';
  return 'not a file the import reads';
}

/**
 * Endpoint and client certificates: written under apis/<base>/ (the API file has no per-API trust key:
 * outbound trust is [truststore] and [throughway.security] client_trust_store trusts client certificates,
 * docs/tls.md), each listed so the operator adds it where it acts.
 */
function certificates(project: Project, base: string, files: Map<string, Buffer>, dropped: Dropped[]): void {
  for (const [dir, to, where] of [
    ['Endpoint-certificates/', 'endpoint-certificates', 'the outbound trust store ([truststore], docs/tls.md) to trust this backend'],
    [
      'Client-certificates/',
      'client-certificates',
      '[throughway.security] client_trust_store, which the gateway checks mutual TLS clients against (docs/tls.md)',
    ],
  ] as const) {
    for (const [n, bytes] of project.files) {
      if (!n.startsWith(dir)) continue;
      const rest = n.slice(dir.length);
      if (/\.ya?ml$|\.json$/.test(rest)) {
        // The index of aliases (endpoint_certificates.yaml, client_certificates.yaml): names only.
        dropped.push({
          path: `${project.where}/${n}`,
          why: `the aliases, endpoints and tiers of the certificates: ${where.startsWith('the outbound') ? 'trust is per store, not per endpoint' : 'a client certificate is not tied to a subscription tier here'}`,
        });
        continue;
      }
      const keep = `${base}/${to}/${rest.split('/').map(safeName).join('/')}`;
      files.set(keep, bytes);
      dropped.push({ path: `${project.where}/${n}`, why: `written to ${keep}: add it to ${where}` });
    }
  }
}

/** The reference's endpoint_security entry -> the API file's `security` table (docs/apis.md, "Backend security"). */
function securityOf(raw: unknown, where: string, base: string, kind: string, dropped: Dropped[]): Rec | undefined {
  if (!isRec(raw) || (raw.enabled !== true && raw.enabled !== 'true')) return undefined;
  const type = String(raw.type ?? '').toLowerCase();
  if (!['basic', 'digest', 'oauth'].includes(type))
    throw new ImportError(
      'IMPORT_FIELD',
      `${where}.type`,
      `${String(raw.type)} is not an endpoint security type of the API file (BASIC, DIGEST, OAUTH)`,
    );
  const env = (what: string): string => `$env{${`${base}_${kind}_${what}`.toUpperCase().replace(/[^A-Z0-9_]/g, '_')}}`;
  const secret = (k: string, what: string): string => {
    const v = str(raw[k]);
    if (v !== undefined) return v;
    dropped.push({
      path: `${where}.${k}`,
      why: `the export carries no ${k}: written as ${env(what)}, read from the environment when the API deploys`,
    });
    return env(what);
  };
  const out: Rec = { type };
  const used = new Set([
    'enabled',
    'type',
    'username',
    'password',
    'grantType',
    'tokenUrl',
    'clientId',
    'clientSecret',
    'customParameters',
    'uniqueIdentifier',
  ]);
  if (type === 'basic' || type === 'digest' || String(raw.grantType ?? '').toUpperCase() === 'PASSWORD') {
    out.username = str(raw.username) ?? '';
    out.password = secret('password', 'password');
  }
  if (type === 'oauth') {
    out.grant_type = String(raw.grantType ?? '').toUpperCase() === 'PASSWORD' ? 'password' : 'client_credentials';
    if (str(raw.tokenUrl) !== undefined) out.token_url = raw.tokenUrl;
    if (str(raw.clientId) !== undefined) out.client_id = raw.clientId;
    out.client_secret = secret('clientSecret', 'client_secret');
    const custom = isRec(raw.customParameters) ? raw.customParameters : {};
    if (Object.keys(custom).length > 0) out.parameters = Object.fromEntries(Object.entries(custom).map(([k, v]) => [k, String(v)]));
  } else if (isRec(raw.customParameters) && Object.keys(raw.customParameters).length > 0) {
    dropped.push({ path: `${where}.customParameters`, why: 'custom parameters are sent only in OAuth token requests' });
  }
  for (const [k, v] of Object.entries(raw)) {
    if (used.has(k) || v === '' || v === null || v === false || (isRec(v) && Object.keys(v).length === 0)) continue;
    dropped.push({ path: `${where}.${k}`, why: reasonFor('endpointConfig.endpoint_security') });
  }
  return out;
}
