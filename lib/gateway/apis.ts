/**
 * API definitions: the gateway's deployed artifacts, one TOML file per API in `<config dir>/apis/`
 * (`[throughway] apis_dir`). The fields are one declarative table (API_FIELDS) that drives validation and
 * docs/apis.md alike, as the configuration schema does for deployment.toml.
 *
 * Invocation shape (spec 002, part 4): /<context>/<version>/<resource>. A file that fails validation is not
 * deployed; the others are. Unknown fields are warnings naming the closest known field, not refusals.
 * Fields accepted before the step that enforces them (authentication, scopes) are reported with
 * API_NOT_ENFORCED so nobody mistakes them for protection they do not give yet. Throttling policy names
 * are checked against the policies file when the gateway passes its names (docs/throttling.md).
 */
import { environment } from '../config/switches';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Segment, SourceMap } from '../config/locate';
import { closest } from '../config/diagnostics';
import {
  type DocumentCodes,
  DocumentReader,
  type FieldDef,
  type FieldType,
  isTable,
  parseDocument,
  typedFields,
  typeOf,
} from '../config/document';
import { FAULT_KINDS } from '../transport/codes';
import { readDefinition } from './openapi-file';
import { targetFromUrl } from '../transport/types';
import type { ApiDiagnostic, ApiDiagnosticCode } from './diagnostics';
import type { PolicyNames } from '../throttle/policies';
import { byGap, type GapSteps, type PluginCatalogue, type PluginStep } from './steps';
import { placeScript, type ApiMediation } from '../mediation';
import {
  BACKEND_CLIENT_AUTH,
  BACKEND_GRANT_TYPES,
  BACKEND_SECURITY_TYPES,
  originOf,
  RESERVED_TOKEN_PARAMETERS,
  type BackendClientAuth,
  type BackendGrantType,
  type BackendSecurity,
  type BackendSecurityType,
} from '../security/backend-credentials';
import {
  AnalysisCache,
  buildGraphqlSchema,
  OPERATION_TYPES,
  type GraphqlSchema,
  type OperationRule,
  type OperationType,
  type QueryLimits,
} from '../graphql';
import type { GrpcMethod, GrpcService } from '../grpc';
import type { ApiFile, ApiFileEndpoint, ApiFilePlugin, ApiFileResource, ApiFileSecurity } from './api-file.generated';

export const LIFECYCLE_STATES = ['PUBLISHED', 'PROTOTYPED', 'DEPRECATED', 'BLOCKED', 'RETIRED'] as const;
export type LifecycleState = (typeof LIFECYCLE_STATES)[number];
export const AUTH_TYPES = ['oauth2', 'none'] as const;
export type AuthType = (typeof AUTH_TYPES)[number];
/** Which tokens a resource accepts (spec 002 part 5 rule 2: a user-only resource refuses application tokens with 900905). */
export const TOKEN_TYPES = ['any', 'application', 'user'] as const;
export type TokenType = (typeof TOKEN_TYPES)[number];
/** Client certificate through the load balancer ([apimgt.mutual_ssl]): not asked, accepted instead of a token, required. */
export const MUTUAL_SSL_MODES = ['off', 'optional', 'mandatory'] as const;
export type MutualSslMode = (typeof MUTUAL_SSL_MODES)[number];
export const API_TYPES = ['HTTP', 'WS', 'GRAPHQL', 'GRPC'] as const;
export type ApiType = (typeof API_TYPES)[number];
export const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

export interface EndpointDefinition {
  /** The URL as deployed (runtime tokens such as ${demo_port} replaced). */
  readonly url: string;
  /** Transport codes (combined, or base for every state) that suspend the endpoint (spec 002 part 7 rule 3). */
  readonly suspendCodes: readonly number[];
  /** ms of the first suspension. */
  readonly suspendDuration: number;
  /** ms: the longest suspension, however often it fails. */
  readonly suspendMaxDuration: number;
  /** Each further suspension lasts this many times the previous one. */
  readonly suspendFactor: number;
  /** ms from hand-off to the backend until the response is complete (ForwardDecision.timeout). */
  readonly timeout: number | undefined;
  /** Transport codes (combined, or base for every state) on which a call is retried when safe. */
  readonly retryCodes: readonly number[];
  /** Retries at most, per call. */
  readonly retryCount: number;
  /** Hard limit: requests per second to this endpoint over every caller (900801, 503). */
  readonly maxTps?: number;
  /** The credentials the backend requires (docs/apis.md, "Backend security"); undefined: none. */
  readonly security?: BackendSecurity;
}

/** An API-level CORS override: fields given replace those of [apim.cors]. */
export interface CorsOverride {
  readonly enable?: boolean;
  readonly allowOrigins?: readonly string[];
  readonly allowMethods?: readonly string[];
  readonly allowHeaders?: readonly string[];
  readonly allowCredentials?: boolean;
}

export interface ResourceDefinition {
  /** As written: exact `/menu`, prefix `/x/*`, or URI template `/orders/{id}`. */
  readonly path: string;
  readonly methods: readonly string[];
  readonly auth: AuthType;
  readonly scopes: readonly string[];
  readonly tokenType: TokenType;
  readonly policy: string | undefined;
  /** Subscription tier of calls without authentication (overrides the API's). */
  readonly unauthenticatedPolicy: string | undefined;
  /** The plugins this resource attaches (`plugins`, docs/plugins.md), their steps by gap of the chain; undefined: none. */
  readonly plugins?: GapSteps;
}

export interface ScopeDefinition {
  readonly name: string;
  readonly description: string | undefined;
  readonly roles: readonly string[];
}

export interface ApiDefinition {
  /** Absolute file path, or '' for definitions given in code. */
  readonly file: string;
  readonly name: string;
  /**
   * As written, e.g. "/pizzashack" (may hold {version}); a tenant's API (a file of apis/t/<domain>/) has
   * `/t/<domain>` before it, the URL it is served at (docs/tenants.md).
   */
  readonly context: string;
  /** The tenant whose API it is (the domain of its apis/t/<domain>/ folder); absent for the super tenant's. */
  readonly tenant?: string;
  readonly version: string;
  readonly defaultVersion: boolean;
  readonly state: LifecycleState;
  /** HTTP, or WS: a WebSocket API, reached by Upgrade: websocket handshakes (docs/websocket.md). */
  readonly type: ApiType;
  readonly auth: AuthType;
  readonly mutualSsl: MutualSslMode;
  readonly labels: readonly string[];
  readonly policy: string | undefined;
  /** Subscription tier of calls without authentication (default: Unauthenticated, per client IP). */
  readonly unauthenticatedPolicy: string | undefined;
  readonly description: string | undefined;
  /** The real path of the API's OpenAPI document (the `definition` key, checked by lib/gateway/openapi-file.ts); undefined: none, or not read (given texts). */
  readonly definition: string | undefined;
  readonly endpoints: { readonly production: EndpointDefinition | undefined; readonly sandbox: EndpointDefinition | undefined };
  readonly cors: CorsOverride | undefined;
  readonly resources: readonly ResourceDefinition[];
  /** Declared scopes ([[scopes]]) with the roles allowed to hold them. */
  readonly scopes: readonly ScopeDefinition[];
  /** Script mediation and conversion of this API's calls (docs/mediation.md); undefined: none. */
  readonly mediation: ApiMediation | undefined;
  /** type = "GRAPHQL": the schema, the query limits and the operations' rules (docs/graphql.md). */
  readonly graphql?: GraphqlApi;
  /** type = "GRPC": the services of its .proto files (docs/grpc.md). */
  readonly grpc?: GrpcApi;
  /** The plugins the API attaches to all its calls (`plugins`, docs/plugins.md), their steps by gap of the chain; undefined: none. */
  readonly plugins?: GapSteps;
}

/** What a gRPC API adds to its definition (the `[grpc]` table): its services, as its .proto files declare them. */
export interface GrpcApi {
  /** Absolute paths of the .proto files read, imports included. */
  readonly protoFiles: readonly string[];
  readonly services: readonly GrpcService[];
  /** "/package.Service/Method" -> the method. */
  readonly methods: ReadonlyMap<string, GrpcMethod>;
}

/** What a GraphQL API adds to its definition (the `[graphql]` table and `[[operations]]`). */
export interface GraphqlApi {
  /** Absolute path of the SDL file (served with the API text: the `[graphql] schema` value). */
  readonly schemaFile: string;
  readonly schema: GraphqlSchema;
  /** The SDL and its sha256 (hex): a worker thread builds the schema once per hash (lib/graphql/worker.ts). */
  readonly sdl: string;
  readonly sdlHash: string;
  readonly limits: QueryLimits;
  /** The most bytes a query's request (body, or query string) may have before it is parsed. */
  readonly maxQueryBytes: number;
  /** "QUERY name" -> the field's scopes and policy. */
  readonly rules: ReadonlyMap<string, OperationRule>;
  /** The analyses of queries seen, per deployed definition (lib/graphql AnalysisCache). */
  readonly cache: AnalysisCache;
}

// ---------------------------------------------------------------------------------------------------------
// The field table
// ---------------------------------------------------------------------------------------------------------

export type { FieldDef, FieldType };

/** The check of each code of suspend_codes and retry_codes. */
const TRANSPORT_CODE = {
  valid: validTransportCode,
  problem: 'is not a backend-side transport code',
  expected: 'a code of docs/faults.md "Transport faults" with side target, e.g. 101503, 101504, 101505',
  list: 'an array of transport codes',
} as const;

/** Backend security ([endpoints.production.security]): the reference's endpoint security types. */
const SECURITY_FIELDS: readonly FieldDef[] = [
  {
    key: 'type',
    type: 'string',
    required: true,
    allowed: BACKEND_SECURITY_TYPES,
    meaning:
      "basic: `Authorization: Basic` from username and password (RFC 7617); digest: HTTP Digest (RFC 7616, MD5 or SHA-256, qop=auth), the backend's 401 challenge answered and the call sent again; oauth: a bearer token the gateway obtains from token_url and caches. The client's own Authorization field is never forwarded to such a backend.",
    example: '"oauth"',
  },
  {
    key: 'username',
    type: 'string',
    meaning:
      'basic and digest: the backend user; oauth with grant_type password: the resource owner. `$env{NAME}` reads an environment variable when the API is deployed.',
    example: '"$env{BACKEND_USER}"',
  },
  {
    key: 'password',
    type: 'string',
    meaning: 'The password of `username`; `$env{NAME}` as for username. Never logged.',
    example: '"$env{BACKEND_PASSWORD}"',
  },
  {
    key: 'grant_type',
    type: 'string',
    default: 'client_credentials',
    allowed: BACKEND_GRANT_TYPES,
    meaning: 'oauth: client_credentials (RFC 6749 §4.4) or password (§4.3, with username and password).',
  },
  {
    key: 'token_url',
    type: 'string',
    meaning: 'oauth: the token endpoint (http:// or https://, with the outbound TLS of docs/tls.md; no proxy).',
    example: '"https://idp.example.com/oauth2/token"',
  },
  { key: 'client_id', type: 'string', meaning: 'oauth: the client id; `$env{NAME}` allowed.', example: '"$env{BACKEND_CLIENT_ID}"' },
  {
    key: 'client_secret',
    type: 'string',
    meaning: 'oauth: the client secret; `$env{NAME}` allowed. Never logged.',
    example: '"$env{BACKEND_CLIENT_SECRET}"',
  },
  {
    key: 'client_auth',
    type: 'string',
    default: 'basic',
    allowed: BACKEND_CLIENT_AUTH,
    meaning:
      'oauth: how the client authenticates to the token endpoint: basic (an Authorization: Basic field, RFC 6749 §2.3.1 encoding) or body (client_id and client_secret form parameters).',
  },
  {
    key: 'scopes',
    type: 'strings',
    default: [],
    meaning: 'oauth: the scopes asked for (the `scope` parameter). Empty: none asked.',
    example: '["orders:read"]',
  },
  {
    key: 'parameters',
    type: 'map',
    default: {},
    meaning:
      'oauth: extra form parameters of the token request (e.g. audience, resource); grant_type, client_id, client_secret, username, password and scope are not allowed here.',
    example: '{ audience = "orders" }',
  },
  {
    key: 'token_timeout',
    type: 'duration',
    default: 10000,
    min: 1,
    meaning: 'oauth: how long a token request may take, connecting included (ms, or "10s"). Exceeded: the call gets 900424.',
  },
  {
    key: 'expiry_margin',
    type: 'duration',
    default: 30000,
    min: 0,
    meaning:
      'oauth: a token is fetched again this long before its expires_in runs out (at most half its lifetime earlier). A token response without expires_in is kept until the backend answers 401.',
  },
  {
    key: 'origin',
    type: 'string',
    meaning:
      "The origin (scheme://host:port) the credentials were stored for: they are sent only there. It must be the origin of the endpoint's `url` (else API_CREDENTIALS_ORIGIN: the API is refused). The publisher writes it; a writer who points `url` at another origin must re-enter the credentials for that host and write its origin here. Absent: the `url`'s origin as deployed.",
    example: '"https://orders.internal.example.com:443"',
  },
  {
    key: 'max_replay_body',
    type: 'number',
    default: 1048576,
    min: 0,
    meaning:
      'digest and oauth: a request body with a Content-Length up to this many bytes is held in memory so that the call can be sent again after a 401; a larger or chunked body is streamed and such a call is not sent again (docs/apis.md, "Backend security").',
  },
];

const ENDPOINT_FIELDS: readonly FieldDef[] = [
  {
    key: 'url',
    type: 'string',
    required: true,
    meaning:
      'Backend base URL (http://host:port/path, or https:// with outbound TLS, docs/tls.md; ws:// and wss:// are accepted as their http:// and https:// equivalents). The backend URL of a call is this URL followed by the resource path and the query string.',
    example: '"http://127.0.0.1:9000/v1"',
  },
  {
    key: 'suspend_codes',
    type: 'codes',
    default: [],
    meaning:
      'Transport codes that suspend the endpoint (spec 002 part 7 rule 3): a combined code (101503) or a base code, which matches every state (101504 matches 101504..101512). While suspended, calls get fault 103007 (503, Retry-After) without touching the backend. Empty: never suspended.',
    example: '[101503, 101504, 101505]',
    item: TRANSPORT_CODE,
  },
  { key: 'suspend_duration', type: 'duration', default: 30000, min: 0, meaning: 'How long the first suspension lasts (ms, or "30s").' },
  {
    key: 'suspend_max_duration',
    type: 'duration',
    default: 300000,
    min: 0,
    meaning: 'The longest suspension, however often the endpoint fails again.',
  },
  {
    key: 'suspend_factor',
    type: 'number',
    default: 2,
    min: 1,
    meaning:
      'Each further suspension, while no call has succeeded since the last one, lasts this many times longer; a successful call resets it.',
  },
  {
    key: 'timeout',
    type: 'duration',
    min: 1,
    meaning:
      'Per-endpoint response timeout: from the hand-off to a backend connection until the response is complete (ms, or "5s"). Exceeded before the response head: fault 101504 + state (504); after it, the client connection is aborted. Default: only [passthru_http] \'http.socket.timeout\' (inactivity) applies.',
  },
  {
    key: 'retry_codes',
    type: 'codes',
    default: [],
    meaning:
      'Transport codes (combined, or base for every state) on which a call is retried on a fresh connection, only while resending loses nothing (no request body byte sent, no response byte received).',
    example: '[101503]',
    item: TRANSPORT_CODE,
  },
  { key: 'retry_count', type: 'number', default: 1, min: 0, meaning: 'Retries at most per call under retry_codes.' },
  {
    key: 'allow_management_port',
    type: 'boolean',
    default: false,
    meaning:
      "Allows a `url` that points at this node's own management port (9443 or 9763 plus server.offset on a loopback address, localhost or server.hostname): the admin API, the key manager and /oauth2/token would be reachable through the API, so such an endpoint is refused (API_SELF_ENDPOINT) unless this is true.",
  },
  {
    key: 'max_tps',
    type: 'number',
    min: 1,
    meaning:
      'Hard limit: requests per second sent to this endpoint, over every caller. Beyond it calls get 900801 (503, Retry-After) without touching the backend (docs/throttling.md). Default: none.',
    example: '100',
  },
  {
    key: 'security',
    type: 'table',
    meaning: 'Credentials the backend requires (docs/apis.md, "Backend security"): basic, digest or oauth.',
    fields: SECURITY_FIELDS,
  },
];

const CORS_FIELDS: readonly FieldDef[] = [
  { key: 'enable', type: 'boolean', meaning: 'CORS handling for this API (default: [apim.cors] enable).' },
  { key: 'allow_origins', type: 'strings', meaning: 'Allowed origins, or ["*"] (default: [apim.cors] allow_origins).' },
  { key: 'allow_methods', type: 'strings', meaning: 'Methods announced in preflight answers (default: [apim.cors] allow_methods).' },
  {
    key: 'allow_headers',
    type: 'strings',
    meaning: 'Request headers announced in preflight answers (default: [apim.cors] allow_headers).',
  },
  {
    key: 'allow_credentials',
    type: 'boolean',
    meaning: 'Access-Control-Allow-Credentials; not allowed together with the origin * (default: [apim.cors] allow_credentials).',
  },
];

/** One plugin attached in an API file (`[[plugins]]`, `[[resources.plugins]]`; docs/plugins.md). */
const PLUGIN_FIELDS: readonly FieldDef[] = [
  {
    key: 'name',
    type: 'string',
    required: true,
    meaning:
      'A plugin of [throughway] api_plugins, by its name: its file name without .js, or its package name. Another name refuses the API (API_PLUGIN).',
    example: '"allow-list"',
  },
  {
    key: 'settings',
    type: 'settings',
    meaning:
      'Its settings for this API or resource, handed to its `phases(settings)` in place of [throughway.plugin.<name>]. Absent: that table.',
    example: '{ ids = ["web"] }',
  },
];

const PLUGINS_MEANING =
  'Policy plugins of [throughway] api_plugins run on these calls only (docs/plugins.md, "Per API and per resource"), one table each, in order: a plugin placed before route, or whose phases(settings) throws or gives no valid placement, refuses the API (API_PLUGIN).';

const RESOURCE_FIELDS: readonly FieldDef[] = [
  {
    key: 'path',
    type: 'string',
    required: true,
    meaning:
      'Exact path (`/menu`), prefix (`/menu/*`, `/*`) or URI template (`/orders/{id}`, one variable per whole segment). Matching order: exact, then the longest prefix, then templates (most literal segments first).',
    example: '"/orders/{id}"',
  },
  {
    key: 'methods',
    type: 'strings',
    allowed: HTTP_METHODS,
    meaning:
      'HTTP methods of the resource. HEAD is allowed wherever GET is (RFC 9110 §9.3.2). Required, except on a gRPC API, whose methods are called by POST (the only value it takes).',
    example: '["GET", "POST"]',
  },
  { key: 'auth', type: 'string', allowed: AUTH_TYPES, meaning: "Overrides the API's `auth` for this resource." },
  {
    key: 'scopes',
    type: 'strings',
    default: [],
    meaning: 'Scopes for this resource: a token needs at least one of them (900910, 403, otherwise). Empty: no scope is needed.',
    example: '["order:write"]',
  },
  {
    key: 'token_type',
    type: 'string',
    default: 'any',
    allowed: TOKEN_TYPES,
    meaning:
      'Which access tokens the resource accepts: any; application (client credentials tokens); user (tokens issued to an end user, e.g. the password grant). Another kind gets 900905 (401).',
  },
  {
    key: 'policy',
    type: 'string',
    meaning:
      'Resource-level throttling policy: an [[api]] policy of the policies file (docs/throttling.md), counted over every caller of this resource; 900802 when exceeded. Ignored when the API has a `policy`.',
    example: '"10KPerMin"',
  },
  {
    key: 'unauthenticated_policy',
    type: 'string',
    meaning: "Overrides the API's `unauthenticated_policy` for this resource.",
    example: '"Unlimited"',
  },
  {
    key: 'plugins',
    type: 'tables',
    default: [],
    meaning: `${PLUGINS_MEANING} They run after the API's own, on calls of this resource.`,
    fields: PLUGIN_FIELDS,
  },
];

const MEDIATION_FIELDS: readonly FieldDef[] = [
  {
    key: 'script',
    type: 'string',
    meaning:
      "A JavaScript file (relative to the API file; its real path must be inside the configuration directory or [throughway.mediation] script_dirs, else API_SCRIPT_PATH) whose `onRequest(message)` and `onResponse(message)` run in the mediation worker pool for every call: they get method, path, headers (and the backend's status) and the parsed body, and return changes (`headers`, `body`, `status`; onRequest's `status` answers the call at once) (docs/mediation.md). Throwing: 103065; running past script_timeout: 103066; out of heap: 103067.",
    example: '"scripts/orders.js"',
  },
  {
    key: 'request_format',
    type: 'string',
    allowed: ['json', 'xml'],
    meaning:
      'Convert JSON or XML request bodies to this format before forwarding (Content-Type and Content-Length follow), under [mediation] engine.preserve_namespace_on_xml_to_json, json_out_auto_array and enable_auto_primitive.',
  },
  {
    key: 'response_format',
    type: 'string',
    allowed: ['json', 'xml'],
    meaning:
      'Convert JSON or XML backend responses to this format before they reach the client (the response is gathered, at most [throughway.mediation] max_body bytes).',
  },
];

/** An API scope as the reference declares it: a name, a description and the roles allowed to hold it. */
const SCOPE_FIELDS: readonly FieldDef[] = [
  {
    key: 'name',
    type: 'string',
    required: true,
    meaning: 'The scope name, as resources list it and tokens carry it.',
    example: '"order:write"',
  },
  { key: 'description', type: 'string', meaning: 'Free text.' },
  {
    key: 'roles',
    type: 'strings',
    default: [],
    meaning:
      'Roles allowed to hold the scope: the token endpoint grants it only to a user (password, authorization_code) or an application owner (client_credentials) with one of them. Empty: any application subscribed to this API gets it (docs/security.md, "Scopes and roles").',
    example: '["admin"]',
  },
];

const GRAPHQL_FIELDS: readonly FieldDef[] = [
  {
    key: 'schema',
    type: 'string',
    required: true,
    meaning:
      "The schema file in SDL, relative to the API file's directory, which it may not leave (an API given in code: any path, relative to the working directory). Parsed and checked when the API deploys: an SDL error refuses the API with its line and column.",
    example: '"orders.graphql"',
  },
  {
    key: 'max_depth',
    type: 'number',
    default: 10,
    min: 0,
    meaning:
      'Deepest selection a query may have (a top-level field is depth 1; fragments add none). Deeper: fault 103181 (400). 0: no limit.',
  },
  {
    key: 'max_complexity',
    type: 'number',
    default: 1000,
    min: 0,
    meaning:
      'Most fields a query may select, counted at every level (one per field, fragments expanded). More: fault 103182 (400). 0: no limit.',
  },
  {
    key: 'max_query_bytes',
    type: 'number',
    default: 65536,
    min: 1,
    meaning:
      'Largest request a query may arrive in (the POST body, or the GET query string), in bytes; gathered and parsed only up to this. Larger: fault 103186 (413).',
  },
  {
    key: 'max_tokens',
    type: 'number',
    default: 10000,
    min: 0,
    meaning:
      "Most lexical tokens the parser reads before it gives up (graphql's maxTokens): a parse-time bound a query reaches before depth and complexity are known; 900422 beyond it. 0: no limit.",
  },
  {
    key: 'introspection',
    type: 'boolean',
    default: false,
    meaning: 'Whether introspection queries (__schema, __type) are allowed. Refused: fault 103183 (403). __typename is always allowed.',
  },
];

const GRPC_FIELDS: readonly FieldDef[] = [
  {
    key: 'proto',
    type: 'strings',
    required: true,
    meaning:
      "The .proto files that declare the API's services, relative to the API file's directory, which they and their imports may not leave (an API given in code: any path, relative to the working directory). Parsed when the API deploys: a syntax error refuses the API with API_PROTO, naming the .proto file and line.",
    example: '["route_guide.proto"]',
  },
];

const OPERATION_FIELDS: readonly FieldDef[] = [
  {
    key: 'type',
    type: 'string',
    required: true,
    allowed: OPERATION_TYPES,
    meaning: 'The root type of the field: QUERY, MUTATION or SUBSCRIPTION.',
    example: '"MUTATION"',
  },
  {
    key: 'name',
    type: 'string',
    required: true,
    meaning: 'The top-level field of that root type, as the schema names it (a field the schema lacks refuses the API).',
    example: '"addOrder"',
  },
  {
    key: 'scopes',
    type: 'strings',
    default: [],
    meaning:
      'Scopes for this field: a token needs at least one of them (900910, 403, otherwise). A query selecting several fields needs a scope of every one of them.',
    example: '["order:write"]',
  },
  {
    key: 'policy',
    type: 'string',
    meaning:
      'Throttling policy of the field: an [[api]] policy of the policies file, counted over every caller of this field like a resource policy (900802 when exceeded). Ignored when the API has a `policy`.',
    example: '"10PerMin"',
  },
];

export const API_FIELDS: readonly FieldDef[] = [
  {
    key: 'name',
    type: 'string',
    required: true,
    meaning: 'API name (shown by `throughway apis list` and in logs).',
    example: '"PizzaShack"',
  },
  {
    key: 'context',
    type: 'string',
    required: true,
    meaning:
      'Context path, invoked as /<context>/<version>/<resource> (spec 002, part 4). May hold `{version}` to place the version elsewhere (`/{version}/pizza`).',
    example: '"/pizzashack"',
  },
  {
    key: 'version',
    type: 'string',
    required: true,
    meaning: 'API version; part of the invocation path (spec 002, part 9 rule 5). Context + version is unique on a gateway.',
    example: '"1.0.0"',
  },
  {
    key: 'default_version',
    type: 'boolean',
    default: false,
    meaning: 'Also reachable without the version segment: /<context>/<resource>. One version per context.',
  },
  {
    key: 'state',
    type: 'string',
    default: 'PUBLISHED',
    allowed: LIFECYCLE_STATES,
    meaning:
      'Lifecycle state: PUBLISHED, PROTOTYPED and DEPRECATED are served; BLOCKED answers 700700 (503, spec 002 part 3); RETIRED answers 103008 (404).',
  },
  {
    key: 'type',
    type: 'string',
    default: 'HTTP',
    allowed: API_TYPES,
    meaning:
      'HTTP; WS for a WebSocket API: its calls are Upgrade: websocket handshakes, routed, authenticated and throttled like any call, then tunnelled to the endpoint. A call without the upgrade answers 103083 (400). docs/websocket.md; GRAPHQL for a GraphQL API: queries by GET and POST are parsed and checked against the schema of its `[graphql]` table before they are forwarded, and subscriptions are WebSocket handshakes (docs/graphql.md); GRPC for a gRPC API: its methods, named by the .proto files of its `[grpc]` table, are its resources, called over HTTP/2 as /package.Service/Method and relayed to the endpoint over HTTP/2 (docs/grpc.md).',
    example: '"WS"',
  },
  {
    key: 'auth',
    type: 'string',
    default: 'oauth2',
    allowed: AUTH_TYPES,
    meaning:
      'Default authentication of the resources: oauth2 (a bearer access token in [apim.oauth_config] auth_header, validated by the gateway: docs/security.md) or none.',
  },
  {
    key: 'mutual_ssl',
    type: 'string',
    default: 'off',
    allowed: MUTUAL_SSL_MODES,
    meaning:
      'Client certificate passed by a TLS-terminating load balancer in [apimgt.mutual_ssl] certificate_header, checked against [throughway.security] client_trust_store: off (not read); optional (a valid certificate authenticates the call instead of a token; an invalid one gets 900901); mandatory (a valid certificate is required, 900901 otherwise, and `auth` applies on top of it).',
  },
  {
    key: 'labels',
    type: 'strings',
    default: ['Default'],
    meaning: 'Deployed only on gateways whose [apim.sync_runtime_artifacts.gateway] gateway_labels share a label.',
  },
  {
    key: 'policy',
    type: 'string',
    meaning:
      'API-level throttling policy: an [[api]] policy of the policies file (docs/throttling.md), counted over every caller of the API; 900800 when exceeded. Resource `policy` fields are then ignored.',
    example: '"50KPerMin"',
  },
  {
    key: 'unauthenticated_policy',
    type: 'string',
    meaning:
      'Subscription tier of calls without authentication, counted per client IP address (900804 when exceeded). Default: the Unauthenticated tier (500 per minute). "Unlimited" turns the unauthenticated limit off (the demo API and benchmarks).',
    example: '"Unlimited"',
  },
  { key: 'description', type: 'string', meaning: 'Free text, shown by `throughway apis list`.' },
  {
    key: 'definition',
    type: 'string',
    meaning:
      "The API's OpenAPI 3 document (JSON, or YAML), relative to the API file's directory, which it may not leave (links resolved; an API given in code: any path, relative to the working directory); at most 2 MiB. Read and checked when the API deploys (API_DEFINITION, API_DEFINITION_PATH); the developer portal renders it on the API's page and offers it for download with the gateway URLs as its servers (docs/portal.md). The gateway routes by [[resources]], never by this document; a gateway-worker, given API texts by its control plane, does not read it. A change of the document alone is checked again when the API file changes; the portal reads it at each request.",
    example: '"pizzashack.openapi.json"',
  },
  {
    key: 'endpoints',
    type: 'table',
    required: true,
    meaning:
      "Backends. Each is a URL string, or a table with `url` and the endpoint advanced configuration below. At least one of production and sandbox. Calls with sandbox keys (the token's keytype) go to sandbox, all others to production; a key type without an endpoint gets 900901 (spec 002, part 7).",
    fields: [
      {
        key: 'production',
        type: 'endpoint',
        meaning: 'Production endpoint.',
        example: '"http://127.0.0.1:9000/v1"',
        fields: ENDPOINT_FIELDS,
      },
      { key: 'sandbox', type: 'endpoint', meaning: 'Sandbox endpoint.', fields: ENDPOINT_FIELDS },
    ],
  },
  { key: 'cors', type: 'table', meaning: 'CORS override for this API; fields not given come from [apim.cors].', fields: CORS_FIELDS },
  {
    key: 'scopes',
    type: 'tables',
    default: [],
    meaning:
      'Scopes of this API, one [[scopes]] table each, with the roles allowed to hold them. A scope a resource lists without a [[scopes]] entry has no roles.',
    fields: SCOPE_FIELDS,
  },
  {
    key: 'resources',
    type: 'tables',
    default: [],
    meaning:
      'Resources, one [[resources]] table each; at least one, except on a GraphQL API, which gets one resource, `/*` with GET and POST, when it lists none.',
    fields: RESOURCE_FIELDS,
  },
  {
    key: 'mediation',
    type: 'table',
    meaning:
      "Mediation of this API's request bodies (docs/mediation.md). Payload validation is global ([passthru_http] force_json_validation / force_xml_validation).",
    fields: MEDIATION_FIELDS,
  },
  {
    key: 'graphql',
    type: 'table',
    meaning: 'type = "GRAPHQL" only, and required there: the schema and the limits of each query (docs/graphql.md).',
    fields: GRAPHQL_FIELDS,
  },
  {
    key: 'operations',
    type: 'tables',
    default: [],
    meaning:
      'type = "GRAPHQL" only: scopes and throttling policies of top-level fields, one [[operations]] table each; a field without one needs no scope (docs/graphql.md).',
    fields: OPERATION_FIELDS,
  },
  {
    key: 'grpc',
    type: 'table',
    meaning:
      'type = "GRPC" only, and required there: the .proto files of its services. Its resources are its methods, `/package.Service/Method` (docs/grpc.md).',
    fields: GRPC_FIELDS,
  },
  { key: 'plugins', type: 'tables', default: [], meaning: `${PLUGINS_MEANING} They run on every call of the API.`, fields: PLUGIN_FIELDS },
];

/** API_FIELDS with the shape the reader checks a file into (lib/gateway/api-file.generated.ts, scripts/gen-file-types.ts). */
const API_FILE = typedFields<ApiFile>(API_FIELDS);

/**
 * Runtime tokens allowed in endpoint URLs, e.g. `${demo_port}` (the demo backend's port with server.offset).
 * Keys that start with `@` are facts for the checks, never tokens (the token syntax cannot name them):
 * MANAGEMENT_PORTS_VAR.
 */
export type ApiVars = Readonly<Record<string, string>>;

/** ApiVars key: this node's management ports with the offset, comma-separated (the self-endpoint check). */
export const MANAGEMENT_PORTS_VAR = '@management_ports';

/** Whether `host` (as WHATWG URL writes it) names this machine: loopback, the unspecified address, or `own`. */
function isOwnHost(host: string, own: string | undefined): boolean {
  const h = host.replace(/^\[|\]$/g, '');
  if (h === 'localhost' || h.endsWith('.localhost') || /^127\./.test(h) || h === '0.0.0.0' || h === '::1' || h === '::') return true;
  // IPv4-mapped loopback (RFC 4291 §2.5.5.2), written in hex by WHATWG URL: ::ffff:7f00:1.
  if (/^::ffff:7f[0-9a-f]{2}:/.test(h)) return true;
  return own !== undefined && own !== '' && h === own.toLowerCase();
}

/**
 * An endpoint URL that points at this node's own management port is refused (API_SELF_ENDPOINT) unless
 * the endpoint sets allow_management_port: the gateway port is reachable by every client, so such an
 * API would hand them the admin API and the token endpoint from the node's own address.
 */
function selfEndpointAllowed(ctx: Ctx, url: string, raw: ApiFileEndpoint, urlSeg: Segment[], seg: Segment[]): boolean {
  const ports = ctx.vars[MANAGEMENT_PORTS_VAR];
  if (ports === undefined || raw.allow_management_port === true) return true;
  const u = new URL(url);
  const secure = u.protocol === 'https:' || u.protocol === 'wss:';
  const port = u.port === '' ? (secure ? 443 : 80) : Number(u.port);
  if (!ports.split(',').includes(String(port)) || !isOwnHost(u.hostname, ctx.vars.hostname)) return true;
  ctx.r.report(
    'error',
    'API_SELF_ENDPOINT',
    urlSeg,
    `${JSON.stringify(url)} points at this node's own management port ${port}: every client of the API would reach the admin API, the key manager and /oauth2/token from the node itself`,
    `a backend other than this node's management ports (${ports}), or ${[...seg, 'allow_management_port'].join('.')} = true`,
  );
  return false;
}

// ---------------------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------------------

interface Ctx {
  readonly r: DocumentReader<ApiDiagnosticCode>;
  readonly vars: ApiVars;
  /** Where scripts may be (GatewaySettings.scriptDirs); undefined: anywhere. */
  readonly scriptDirs: readonly string[] | undefined;
  /**
   * Files given with the API text (a gateway-worker's, served by its control plane: docs/scale-out.md): a
   * GraphQL API's schema, a gRPC API's .proto files; null: texts given without them, nothing is read from
   * disk; undefined: read them from disk. `disk` set: the .proto files given stand in for those on disk,
   * the others are read (a publisher's upload checked before it is written).
   */
  readonly served?: ServedFiles | null;
  /** What `plugins` may name (lib/gateway/steps.ts; a gateway always gives one); undefined: names not checked, nothing attached. */
  readonly plugins?: PluginCatalogue;
}

/** A GraphQL API's SDL served beside its API text: `file` is the `[graphql] schema` value it answers. */
export interface ServedSchema {
  readonly file: string;
  readonly text: string;
}

/** A .proto file served beside a gRPC API's text: `file` is its name relative to the API file's directory. */
export interface ServedProto {
  readonly file: string;
  /** null: taken as deleted (ServedFiles.disk only). */
  readonly text: string | null;
}

/** What is given with an API text in place of the files beside it (Ctx.served). */
export interface ServedFiles {
  readonly schema?: ServedSchema;
  readonly protos?: readonly ServedProto[];
  /** The .proto files not given are read from disk (the schema is read from disk then too). */
  readonly disk?: boolean;
}

/** The API file's codes for the shared document reader's steps (config/document.ts). */
export const API_CODES: DocumentCodes<ApiDiagnosticCode> = {
  io: 'API_IO',
  syntax: 'API_SYNTAX',
  unknown: 'API_UNKNOWN_FIELD',
  type: 'API_TYPE',
  required: 'API_REQUIRED',
  allowed: 'API_ALLOWED',
  value: 'API_VALUE',
};

/** Every transport code a suspension or retry list may name: bases, and base + state for the others. */
function validTransportCode(code: number): boolean {
  for (const kind of Object.values(FAULT_KINDS)) {
    if (kind.side !== 'target') continue;
    if (code === kind.base || (kind.addsState && code >= kind.base && code <= kind.base + 8)) return true;
  }
  return false;
}

// --- semantic checks on the normalised object

const TOKEN = /\$\{([A-Za-z0-9_.]+)\}/g;

function substitute(ctx: Ctx, text: string, seg: Segment[]): string | undefined {
  let missing: string | undefined;
  const out = text.replace(TOKEN, (m, name: string) => {
    const v = ctx.vars[name];
    if (v === undefined) {
      missing ??= name;
      return m;
    }
    return v;
  });
  if (missing !== undefined) {
    const known = Object.keys(ctx.vars).filter((k) => !k.startsWith('@'));
    ctx.r.report(
      'error',
      'API_VALUE',
      seg,
      `unknown runtime token \${${missing}}`,
      known.length > 0 ? `one of ${known.map((k) => `\${${k}}`).join(', ')}` : 'no ${...} tokens here',
    );
    return undefined;
  }
  return out;
}

function hasDotSegment(path: string): boolean {
  return path.split('/').some((s) => s === '.' || s === '..');
}

/** A context: absolute, no trailing slash, no query or wildcard, braces only for {version}. */
function checkContext(ctx: Ctx, context: string): boolean {
  const seg = ['context'];
  const bad = (why: string): boolean => {
    ctx.r.report(
      'error',
      'API_VALUE',
      seg,
      `${JSON.stringify(context)} ${why}`,
      'an absolute path such as "/pizzashack", without a trailing slash',
    );
    return false;
  };
  if (!context.startsWith('/') || context.length < 2) return bad('is not an absolute path with at least one segment');
  if (context.endsWith('/')) return bad('ends with a slash');
  if (context.includes('//')) return bad('has an empty segment');
  if (/[?#*\s%]/.test(context)) return bad('holds a character a context cannot (?, #, *, %, whitespace)');
  if (context.replace(/\{version\}/g, '').match(/[{}]/) !== null) return bad('holds a brace other than {version}');
  if ((context.match(/\{version\}/g) ?? []).length > 1) return bad('holds {version} more than once');
  if (context.replace(/\/\{version\}/g, '') === '') return bad('needs a segment besides {version}');
  if (hasDotSegment(context)) return bad('has a dot segment (. or ..)');
  if (context === '/t' || context.startsWith('/t/'))
    return bad("starts with /t/, the URL space of tenants' APIs: put a tenant's API files in apis/t/<domain>/ (docs/tenants.md)");
  return true;
}

/** A resource path: exact, `/prefix/*`, or a template with whole-segment `{name}` variables. */
function checkResourcePath(ctx: Ctx, path: string, seg: Segment[]): boolean {
  const bad = (why: string): boolean => {
    ctx.r.report(
      'error',
      'API_VALUE',
      seg,
      `${JSON.stringify(path)} ${why}`,
      'an exact path "/menu", a prefix "/menu/*" or a template "/orders/{id}"',
    );
    return false;
  };
  if (!path.startsWith('/')) return bad('does not start with /');
  if (/[?#\s]/.test(path)) return bad('holds ?, # or whitespace (query strings are not part of a resource path)');
  if (hasDotSegment(path)) return bad('has a dot segment (. or ..)');
  const parts = path.split('/').slice(1);
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i] as string;
    if (p === '' && !(i === parts.length - 1 && parts.length === 1)) return bad('has an empty segment');
    if (p.includes('*') && !(p === '*' && i === parts.length - 1)) return bad('uses * other than as the whole last segment (/prefix/*)');
    if (p.includes('{') || p.includes('}')) {
      if (!/^\{[A-Za-z_][A-Za-z0-9_.-]*\}$/.test(p)) return bad('has a template variable that is not a whole segment {name}');
    }
  }
  const names = parts.filter((p) => p.startsWith('{')).map((p) => p.slice(1, -1));
  if (new Set(names).size !== names.length) return bad('binds one variable name twice');
  return true;
}

/** The shape two resource paths share when they match the same requests (`/a/{id}` and `/a/{x}`). */
export function pathShape(path: string): string {
  return path.replace(/\{[^/]*\}/g, '{}');
}

function toEndpoint(ctx: Ctx, raw: ApiFileEndpoint | undefined, seg: Segment[]): EndpointDefinition | undefined | null {
  if (raw === undefined) return undefined;
  const urlSeg = ctx.r.written([...seg, 'url']) ? [...seg, 'url'] : seg;
  const url = substitute(ctx, raw.url, urlSeg);
  if (url === undefined) return null;
  try {
    targetFromUrl(url);
  } catch (err) {
    ctx.r.report(
      'error',
      'API_VALUE',
      urlSeg,
      `${JSON.stringify(url)} is not a usable endpoint URL: ${(err as Error).message}`,
      'http://host:port/path',
    );
    return null;
  }
  const ep: EndpointDefinition = {
    url,
    suspendCodes: raw.suspend_codes,
    suspendDuration: raw.suspend_duration,
    suspendMaxDuration: Math.max(raw.suspend_max_duration, raw.suspend_duration),
    suspendFactor: raw.suspend_factor,
    timeout: raw.timeout,
    retryCodes: raw.retry_codes,
    retryCount: raw.retry_count,
    ...(raw.max_tps !== undefined ? { maxTps: raw.max_tps } : {}),
  };
  if (!selfEndpointAllowed(ctx, url, raw, urlSeg, seg)) return null;
  if (raw.security !== undefined) {
    const security = toSecurity(ctx, raw.security, [...seg, 'security'], url);
    if (security === undefined) return null;
    return Object.freeze({ ...ep, security });
  }
  return Object.freeze(ep);
}

const ENV = /^\$env\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

/** The fields of [endpoints.*.security] that may be `$env{NAME}`, and that a type may require. */
type CredentialKey = 'username' | 'password' | 'client_id' | 'client_secret';

/** A credential value: as written, or `$env{NAME}` read from the environment when the API is deployed. */
function credential(ctx: Ctx, raw: ApiFileSecurity, key: CredentialKey, seg: Segment[]): string | undefined {
  const v = raw[key];
  if (v === undefined) return undefined;
  const m = ENV.exec(v);
  if (m === null) return v;
  const value = environment()[m[1] as string];
  if (value === undefined) {
    ctx.r.report(
      'error',
      'API_VALUE',
      [...seg, key],
      `environment variable ${m[1] as string} is not set`,
      'an exported variable, or the value itself',
    );
    return undefined;
  }
  return value;
}

/**
 * [endpoints.*.security]: the fields each type needs, `$env{NAME}` values read, the origin the credentials
 * are bound to (that of `url`, the endpoint's URL as deployed). Undefined after reporting.
 */
function toSecurity(ctx: Ctx, raw: ApiFileSecurity, seg: Segment[], url: string): BackendSecurity | undefined {
  const type: BackendSecurityType = raw.type;
  const errors = ctx.r.errors;
  const urlOrigin = originOf(url) as string;
  let origin = urlOrigin;
  if (raw.origin !== undefined) {
    const bound = originOf(raw.origin);
    if (bound === undefined)
      ctx.r.report(
        'error',
        'API_VALUE',
        [...seg, 'origin'],
        `${JSON.stringify(raw.origin)} is not an origin`,
        'scheme://host:port, e.g. "https://orders.internal.example.com:443"',
      );
    else if (bound !== urlOrigin)
      ctx.r.report(
        'error',
        'API_CREDENTIALS_ORIGIN',
        [...seg, 'origin'],
        `the credentials were stored for ${bound} and the url points to ${urlOrigin}: they are never sent to another origin; re-enter them for ${urlOrigin} and write origin = "${urlOrigin}", or remove the security table`,
        `origin = "${urlOrigin}" with credentials meant for that host`,
      );
    else origin = bound;
  }
  const need = (key: CredentialKey | 'token_url'): void => {
    if (raw[key] === undefined)
      ctx.r.report(
        'error',
        'API_REQUIRED',
        [...seg, key],
        `${key} is required for type = "${type}"${type === 'oauth' && (key === 'username' || key === 'password') ? ' with grant_type = "password"' : ''}`,
      );
  };
  const grant: BackendGrantType = raw.grant_type;
  if (type === 'basic' || type === 'digest' || grant === 'password') {
    need('username');
    need('password');
  }
  if (type === 'oauth') {
    for (const k of ['token_url', 'client_id', 'client_secret'] as const) need(k);
    if (raw.token_url !== undefined) {
      let ok = false;
      try {
        const u = new URL(raw.token_url);
        ok = u.protocol === 'http:' || u.protocol === 'https:';
      } catch {
        ok = false;
      }
      if (!ok)
        ctx.r.report(
          'error',
          'API_VALUE',
          [...seg, 'token_url'],
          `${JSON.stringify(raw.token_url)} is not an http:// or https:// URL`,
          'https://idp.example.com/oauth2/token',
        );
    }
    for (const k of Object.keys(raw.parameters)) {
      if (RESERVED_TOKEN_PARAMETERS.includes(k))
        ctx.r.report(
          'error',
          'API_VALUE',
          [...seg, 'parameters', k],
          `${k} is set by the gateway and cannot be an extra parameter`,
          `a parameter other than ${RESERVED_TOKEN_PARAMETERS.join(', ')}`,
        );
    }
  }
  const username = credential(ctx, raw, 'username', seg);
  const password = credential(ctx, raw, 'password', seg);
  const clientId = credential(ctx, raw, 'client_id', seg);
  const clientSecret = credential(ctx, raw, 'client_secret', seg);
  const tokenUrl = raw.token_url;
  if (ctx.r.errors > errors) return undefined;
  // oauth: token_url, client_id and client_secret are there (need() reported any missing one above).
  const oauth =
    type === 'oauth' && tokenUrl !== undefined && clientId !== undefined && clientSecret !== undefined
      ? Object.freeze({
          grantType: grant,
          tokenUrl,
          clientId,
          clientSecret,
          scopes: raw.scopes,
          parameters: raw.parameters,
          clientAuth: raw.client_auth,
          timeout: raw.token_timeout,
          expiryMargin: raw.expiry_margin,
        })
      : undefined;
  return Object.freeze({ type, origin, username, password, maxReplayBody: raw.max_replay_body, oauth });
}

/** Reports each not-yet-enforced field (FieldDef.notEnforced) once per API and place, at its first use. */
function reportNotEnforced(ctx: Ctx, raw: Record<string, unknown>): void {
  const note = (key: string, until: string, seg: Segment[]): void => {
    ctx.r.report('warning', 'API_NOT_ENFORCED', seg, `${key} is accepted but not enforced until ${until}`);
  };
  for (const def of API_FIELDS) if (def.notEnforced !== undefined && raw[def.key] !== undefined) note(def.key, def.notEnforced, [def.key]);
  const seen = new Set<string>();
  const resources: readonly unknown[] = Array.isArray(raw.resources) ? raw.resources : [];
  resources.forEach((r, i) => {
    if (!isTable(r)) return;
    for (const def of RESOURCE_FIELDS) {
      if (def.notEnforced === undefined || r[def.key] === undefined || seen.has(def.key)) continue;
      seen.add(def.key);
      note(def.key, def.notEnforced, ['resources', i, def.key]);
    }
  });
}

/**
 * The `plugins` of an API or a resource: each a plugin of the catalogue, once, whose steps for its settings
 * are placed after route (before route no API is known). Undefined: none attached; null: refused (reported).
 */
function pluginsOf(ctx: Ctx, list: readonly ApiFilePlugin[], seg: Segment[]): GapSteps | undefined | null {
  // Tools that read API files without a gateway (the consoles, `apis list`, export) check the shape only.
  const catalogue = ctx.plugins;
  if (list.length === 0 || catalogue === undefined) return undefined;
  const errors = ctx.r.errors;
  const steps: PluginStep[] = [];
  const seen = new Set<string>();
  list.forEach((p, i) => {
    const name = p.name;
    const at = [...seg, i, 'name'];
    const known = catalogue.names;
    if (!known.includes(name)) {
      const near = closest(name, [...known]);
      ctx.r.report(
        'error',
        'API_PLUGIN',
        at,
        `${JSON.stringify(name)} is not a plugin of [throughway] api_plugins${near !== undefined ? `; did you mean "${near}"?` : ''}`,
        known.length === 0 ? 'a plugin listed in [throughway] api_plugins (none is)' : `one of ${known.join(', ')}`,
      );
      return;
    }
    if (seen.has(name)) {
      ctx.r.report('error', 'API_PLUGIN', at, `${JSON.stringify(name)} is attached twice here`, 'each plugin once per API or resource');
      return;
    }
    seen.add(name);
    const made = catalogue.stepsOf(name, p.settings);
    if (typeof made === 'string') {
      ctx.r.report('error', 'API_PLUGIN', at, `plugin ${JSON.stringify(name)} cannot be attached: ${made}`);
      return;
    }
    const early = made.find((s) => s.gap === 0);
    if (early !== undefined) {
      ctx.r.report(
        'error',
        'API_PLUGIN',
        at,
        `plugin ${JSON.stringify(name)} places its phase "${early.step.name}" before route, where no API is known yet: attached plugins run after route`,
        'after: "route" or a later phase',
      );
      return;
    }
    steps.push(...made);
  });
  return ctx.r.errors > errors ? null : byGap(steps);
}

/** A throttling policy name must be one the policies file defines (docs/throttling.md). */
function checkPolicy(
  ctx: Ctx,
  policies: PolicyNames | undefined,
  kind: 'api' | 'subscription',
  name: string | undefined,
  seg: Segment[],
): void {
  if (policies === undefined || name === undefined) return;
  const known = policies[kind];
  if (known.has(name)) return;
  const near = closest(name, [...known]);
  const list = [...known].join(', ');
  ctx.r.report(
    'error',
    'API_VALUE',
    seg,
    `${JSON.stringify(name)} is not ${kind === 'api' ? 'an [[api]]' : 'a [[subscription]]'} policy of the policies file${near !== undefined ? `; did you mean "${near}"?` : ''}${name === 'Unlimited' ? ' ([apim.throttling] enable_unlimited_tier is false)' : ''}`,
    list === '' ? 'none defined' : `one of ${list}`,
  );
}

/**
 * The `[graphql]` table and `[[operations]]` of a GraphQL API: the schema file (inside the API file's
 * directory) read and built, each operation's field found in it. Both tables refused on other types.
 */
function graphqlOf(ctx: Ctx, t: ApiFile, file: string, apiType: ApiType, policies: PolicyNames | undefined): GraphqlApi | undefined {
  const g = t.graphql;
  const ops = t.operations;
  if (apiType !== 'GRAPHQL') {
    if (g !== undefined)
      ctx.r.report(
        'error',
        'API_VALUE',
        ['graphql'],
        'a [graphql] table is only for type = "GRAPHQL"',
        'type = "GRAPHQL", or remove the table',
      );
    if (ops.length > 0)
      ctx.r.report(
        'error',
        'API_VALUE',
        ['operations'],
        '[[operations]] are only for type = "GRAPHQL"',
        'type = "GRAPHQL", or [[resources]]',
      );
    return undefined;
  }
  if (t.mediation !== undefined)
    ctx.r.report(
      'error',
      'API_VALUE',
      ['mediation'],
      'a GraphQL API has no [mediation]: the gateway reads its queries itself (docs/graphql.md)',
      'remove the table',
    );
  if (g === undefined) {
    ctx.r.report(
      'error',
      'API_REQUIRED',
      ['graphql'],
      'a GraphQL API needs a [graphql] table with its schema',
      '[graphql] schema = "schema.graphql"',
    );
    return undefined;
  }
  let schemaFile: string;
  let sdl: string;
  if (ctx.served !== undefined && ctx.served?.disk !== true) {
    // Served with the API text: the control plane read it inside its apis/ directory (lib/scale/deployments.ts).
    schemaFile = g.schema;
    const served = ctx.served?.schema;
    if (served === undefined || served.file !== schemaFile) {
      ctx.r.report(
        'error',
        'API_VALUE',
        ['graphql', 'schema'],
        `schema ${schemaFile} was not served with the API file (its control plane could not read it inside its apis/ directory)`,
        'an SDL file next to the API file on the control plane',
      );
      return undefined;
    }
    sdl = served.text;
  } else {
    const dir = file === '' ? process.cwd() : path.dirname(file);
    schemaFile = path.resolve(dir, g.schema);
    const read = readSchemaFile(dir, schemaFile, file !== '');
    if ('error' in read) {
      ctx.r.report(
        'error',
        'API_VALUE',
        ['graphql', 'schema'],
        read.outside ? `${JSON.stringify(g.schema)} leaves the API file's directory` : `schema ${schemaFile} cannot be read: ${read.error}`,
        read.outside ? 'a path inside the directory of the API file, e.g. "schema.graphql"' : 'an SDL file next to the API file',
      );
      return undefined;
    }
    sdl = read.text;
  }
  const built = buildGraphqlSchema(sdl, `type = "GRAPHQL" (${file === '' ? 'an API given in code' : file})`);
  if (!built.ok) {
    ctx.r.report(
      'error',
      'API_VALUE',
      ['graphql', 'schema'],
      `schema ${schemaFile} is not a valid GraphQL schema: ${built.message}`,
      'SDL as the GraphQL specification writes it (type Query { ... })',
    );
    return undefined;
  }
  const rules = new Map<string, OperationRule>();
  ops.forEach((o, i) => {
    const type: OperationType = o.type;
    const name = o.name;
    const known = built.schema.rootFields[type];
    if (!known.has(name)) {
      const near = closest(name, [...known]);
      ctx.r.report(
        'error',
        'API_VALUE',
        ['operations', i, 'name'],
        `the schema has no ${type.toLowerCase()} field ${JSON.stringify(name)}${near !== undefined ? `; did you mean "${near}"?` : ''}`,
        known.size === 0 ? `the schema has no ${type.toLowerCase()} type` : `one of ${[...known].join(', ')}`,
      );
      return;
    }
    const key = `${type} ${name}`;
    if (rules.has(key)) {
      ctx.r.report('error', 'API_DUPLICATE_RESOURCE', ['operations', i, 'name'], `${key} is listed twice`);
      return;
    }
    checkPolicy(ctx, policies, 'api', o.policy, ['operations', i, 'policy']);
    rules.set(key, Object.freeze({ type, name, scopes: o.scopes, policy: o.policy }));
  });
  const limits: QueryLimits = Object.freeze({
    maxDepth: g.max_depth,
    maxComplexity: g.max_complexity,
    maxTokens: g.max_tokens,
    introspection: g.introspection,
  });
  return Object.freeze({
    schemaFile,
    schema: built.schema,
    sdl,
    sdlHash: createHash('sha256').update(sdl).digest('hex'),
    limits,
    maxQueryBytes: g.max_query_bytes,
    rules,
    cache: new AnalysisCache(),
  });
}

/**
 * The `[grpc]` table of a gRPC API: its .proto files (inside the API file's directory) parsed for their
 * services (lib/grpc/proto.ts). Refused on other types; a gRPC API has no [mediation] (its messages are
 * relayed as bytes), and its endpoints are origins (gRPC calls the method's path, with no base path).
 */
function grpcOf(
  ctx: Ctx,
  t: ApiFile,
  file: string,
  apiType: ApiType,
  endpoints: readonly (EndpointDefinition | null | undefined)[],
): GrpcApi | undefined {
  const g = t.grpc;
  if (apiType !== 'GRPC') {
    ctx.r.report('error', 'API_VALUE', ['grpc'], 'a [grpc] table is only for type = "GRPC"', 'type = "GRPC", or remove the table');
    return undefined;
  }
  if (t.mediation !== undefined)
    ctx.r.report(
      'error',
      'API_VALUE',
      ['mediation'],
      'a gRPC API has no [mediation]: its messages are relayed as they are (docs/grpc.md)',
      'remove the table',
    );
  for (const ep of endpoints) {
    if (ep === null || ep === undefined) continue;
    const u = new URL(ep.url);
    if ((u.protocol !== 'http:' && u.protocol !== 'https:') || (u.pathname !== '/' && u.pathname !== '') || u.search !== '')
      ctx.r.report(
        'error',
        'API_VALUE',
        ['endpoints'],
        `${JSON.stringify(ep.url)} cannot serve gRPC: a gRPC endpoint is an http:// (h2c) or https:// (h2 by ALPN) origin without a path`,
        '"http://host:50051" or "https://host:443"',
      );
  }
  if (g === undefined) {
    ctx.r.report(
      'error',
      'API_REQUIRED',
      ['grpc'],
      'a gRPC API needs a [grpc] table with its .proto files',
      '[grpc] proto = ["service.proto"]',
    );
    return undefined;
  }
  const files = g.proto;
  if (files.length === 0) {
    ctx.r.report('error', 'API_VALUE', ['grpc', 'proto'], 'lists no .proto file', '["service.proto"]');
    return undefined;
  }
  // Texts given without their files (a gateway-worker's) are read in a directory of their own: the
  // .proto files served with them (lib/scale/deployments.ts), never the worker's disk.
  const onDisk = ctx.served === undefined || ctx.served?.disk === true;
  const dir = !onDisk ? SERVED_DIR : file === '' ? process.cwd() : path.dirname(file);
  const given =
    ctx.served === undefined
      ? undefined
      : {
          texts: new Map((ctx.served?.protos ?? []).map((p) => [path.resolve(dir, p.file), p.text] as const)),
          disk: onDisk,
        };
  // Loaded with the first gRPC API: require('throughway') loads the transport and the gateway only
  // (test/package/module-count.test.ts; docs/performance.md, "Import and start-up").
  const { loadProtos } = require('../grpc/proto') as typeof import('../grpc/proto');
  const loaded = loadProtos(dir, files, file !== '' || !onDisk, `type = "GRPC" (${file === '' ? 'an API given in code' : file})`, given);
  if (!loaded.ok) {
    // A served file is named as the control plane names it: beside the API file's name.
    const name = (f: string): string =>
      onDisk ? f : `${path.posix.dirname(file)}/${path.relative(SERVED_DIR, f).split(path.sep).join('/')}`;
    const where =
      loaded.file !== undefined ? `${name(loaded.file)}${loaded.line !== undefined ? `:${loaded.line}` : ''}` : files.join(', ');
    ctx.r.report(
      'error',
      'API_PROTO',
      ['grpc', 'proto'],
      `${where}: ${loaded.message}`,
      'a .proto file in the protobuf language (proto2 or proto3) next to the API file',
    );
    return undefined;
  }
  const methods = new Map<string, GrpcMethod>();
  for (const s of loaded.services) for (const m of s.methods) methods.set(m.path, m);
  if (methods.size === 0) {
    ctx.r.report(
      'error',
      'API_PROTO',
      ['grpc', 'proto'],
      `${files.join(', ')} declare no service with a method`,
      'a service with rpc methods',
    );
    return undefined;
  }
  return Object.freeze({ protoFiles: loaded.files, services: loaded.services, methods });
}

/** Where .proto files served with an API text are resolved (a name only: nothing is read there). */
const SERVED_DIR = path.resolve('/served-protos');

/** A resource of a gRPC API: the path of a method of its .proto files, called by POST only. */
function grpcResource(ctx: Ctx, grpc: GrpcApi, r: ApiFileResource, i: number): boolean {
  const p = r.path;
  if (!grpc.methods.has(p)) {
    const near = closest(p, [...grpc.methods.keys()]);
    ctx.r.report(
      'error',
      'API_VALUE',
      ['resources', i, 'path'],
      `the .proto files declare no method ${JSON.stringify(p)}${near !== undefined ? `; did you mean "${near}"?` : ''}`,
      'a method as /package.Service/Method',
    );
    return false;
  }
  const m = r.methods;
  if (m !== undefined && (m.length !== 1 || m[0] !== 'POST')) {
    ctx.r.report('error', 'API_VALUE', ['resources', i, 'methods'], 'a gRPC method is called by POST only', '["POST"], or leave it out');
    return false;
  }
  return true;
}

/**
 * The `definition` key: the OpenAPI document read and checked beside the API file (openapi-file.ts).
 * Texts given without their files (a gateway-worker's, ctx.served set) never read it: the gateway does not
 * route by it, and the control plane that serves them is the node whose consoles show it.
 */
function definitionOf(ctx: Ctx, name: string | undefined, file: string): string | undefined {
  if (name === undefined || (ctx.served !== undefined && ctx.served?.disk !== true)) return undefined;
  const read = readDefinition(file, name, file !== '');
  if (read.ok) return read.file;
  ctx.r.report(
    'error',
    read.outside ? 'API_DEFINITION_PATH' : 'API_DEFINITION',
    ['definition'],
    `${JSON.stringify(name)}: ${read.error}`,
    read.outside
      ? 'a path inside the directory of the API file, e.g. "orders.openapi.json"'
      : 'an OpenAPI 3 document (JSON or YAML) of at most 2 MiB next to the API file',
  );
  return undefined;
}

/** The largest schema file read (a schema is configuration, not traffic). */
export const MAX_SCHEMA_BYTES = 4 * 1024 * 1024;

/**
 * Reads a schema file: `schemaFile` (resolved) must stay inside `dir` when `inside` (an API file's schema
 * stays beside it: a file dropped into apis/ cannot read the host's files; an API given in code names any
 * path), be a file, and hold at most `max` bytes (MAX_SCHEMA_BYTES; a .proto file MAX_PROTO_BYTES of lib/grpc/proto.ts).
 */
export function readSchemaFile(
  dir: string,
  schemaFile: string,
  inside: boolean,
  max = MAX_SCHEMA_BYTES,
): { readonly text: string } | { readonly error: string; readonly outside: boolean } {
  const rel = path.relative(dir, schemaFile);
  if (inside && (rel.startsWith('..') || path.isAbsolute(rel))) return { error: "it leaves the API file's directory", outside: true };
  try {
    const st = fs.statSync(schemaFile);
    if (!st.isFile() || st.size > max)
      return { error: st.isFile() ? `it is larger than ${max} bytes` : 'it is not a file', outside: false };
    return { text: fs.readFileSync(schemaFile, 'utf8') };
  } catch (err) {
    return { error: (err as Error).message, outside: false };
  }
}

export interface ApiParseResult {
  readonly api: ApiDefinition | undefined;
  readonly diagnostics: readonly ApiDiagnostic[];
}

/**
 * Validates one API definition given as a plain object (a parsed file, or an object an embedder passes).
 * `map` locates fields in the file's text for line numbers. `scriptDirs`: the directories a [mediation]
 * script must be in (a gateway always passes them: GatewaySettings.scriptDirs); undefined: anywhere.
 */
export function validateApi(
  raw: unknown,
  file: string,
  vars: ApiVars = {},
  map?: SourceMap,
  policies?: PolicyNames,
  scriptDirs?: readonly string[],
  served?: ServedFiles | null,
  plugins?: PluginCatalogue,
): ApiParseResult {
  const ctx: Ctx = {
    r: new DocumentReader(file === '' ? '<api>' : file, map, API_CODES),
    vars,
    scriptDirs,
    ...(served !== undefined ? { served } : {}),
    ...(plugins !== undefined ? { plugins } : {}),
  };
  if (!isTable(raw)) {
    ctx.r.report('error', 'API_TYPE', [], `an API definition is a table, got ${typeOf(raw)}`);
    return { api: undefined, diagnostics: ctx.r.diagnostics };
  }
  const t = ctx.r.read(API_FILE, raw, []);
  if (t === undefined) return { api: undefined, diagnostics: ctx.r.diagnostics };

  const context = t.context;
  const version = t.version;
  checkContext(ctx, context);
  if (!/^[^/\s?#{}%]+$/.test(version) || version === '.' || version === '..') {
    ctx.r.report(
      'error',
      'API_VALUE',
      ['version'],
      `${JSON.stringify(version)} cannot be a path segment`,
      'a version such as "1.0.0" or "v2", without /, ?, #, braces or whitespace',
    );
  }
  const endpointsRaw = t.endpoints;
  const production = toEndpoint(ctx, endpointsRaw.production, ['endpoints', 'production']);
  const sandbox = toEndpoint(ctx, endpointsRaw.sandbox, ['endpoints', 'sandbox']);
  if (endpointsRaw.production === undefined && endpointsRaw.sandbox === undefined) {
    ctx.r.report(
      'error',
      'API_REQUIRED',
      ['endpoints'],
      'at least one of production and sandbox is required',
      'production = "http://host:port/path"',
    );
  }

  // A WebSocket handshake is not sent twice, so a Digest challenge could never be answered (docs/apis.md).
  for (const [name, ep] of [
    ['production', production],
    ['sandbox', sandbox],
  ] as const) {
    if (t.type === 'WS' && ep?.security?.type === 'digest')
      ctx.r.report(
        'error',
        'API_VALUE',
        ['endpoints', name, 'security', 'type'],
        'digest is not available for WebSocket APIs (a handshake is not sent twice)',
        'basic or oauth',
      );
  }
  const apiAuth: AuthType = t.auth;
  const resourcesRaw = t.resources;
  const apiType: ApiType = t.type;
  const grpc = apiType === 'GRPC' || t.grpc !== undefined ? grpcOf(ctx, t, file, apiType, [production, sandbox]) : undefined;
  if (resourcesRaw.length === 0 && apiType !== 'GRAPHQL' && apiType !== 'GRPC')
    ctx.r.report(
      'error',
      'API_REQUIRED',
      ['resources'],
      'at least one [[resources]] entry is required',
      '[[resources]] with path and methods',
    );
  const seen = new Map<string, number>();
  const resources: ResourceDefinition[] = [];
  resourcesRaw.forEach((r, i) => {
    const path = r.path;
    if (apiType === 'GRPC') {
      if (grpc !== undefined && !grpcResource(ctx, grpc, r, i)) return;
    } else if (!checkResourcePath(ctx, path, ['resources', i, 'path'])) return;
    const methods: readonly string[] | undefined = r.methods ?? (apiType === 'GRPC' ? ['POST'] : undefined);
    if (methods === undefined) {
      ctx.r.report('error', 'API_REQUIRED', ['resources', i, 'methods'], 'methods is required', 'e.g. ["GET"]');
      return;
    }
    if (methods.length === 0) {
      ctx.r.report('error', 'API_VALUE', ['resources', i, 'methods'], 'lists no method', 'e.g. ["GET"]');
      return;
    }
    const shape = pathShape(path);
    for (const m of methods) {
      const key = `${m} ${shape}`;
      const first = seen.get(key);
      if (first !== undefined) {
        ctx.r.report('error', 'API_DUPLICATE_RESOURCE', ['resources', i, 'path'], `${m} ${path} is already defined by resources[${first}]`);
      } else seen.set(key, i);
    }
    const attached = pluginsOf(ctx, r.plugins, ['resources', i, 'plugins']);
    resources.push(
      Object.freeze({
        path,
        methods,
        auth: r.auth ?? apiAuth,
        scopes: r.scopes,
        tokenType: r.token_type,
        policy: r.policy,
        unauthenticatedPolicy: r.unauthenticated_policy,
        ...(attached != null ? { plugins: attached } : {}),
      }),
    );
    checkPolicy(ctx, policies, 'api', r.policy, ['resources', i, 'policy']);
    checkPolicy(ctx, policies, 'subscription', r.unauthenticated_policy, ['resources', i, 'unauthenticated_policy']);
  });
  checkPolicy(ctx, policies, 'api', t.policy, ['policy']);
  checkPolicy(ctx, policies, 'subscription', t.unauthenticated_policy, ['unauthenticated_policy']);

  let cors: CorsOverride | undefined;
  if (t.cors !== undefined) {
    const c = t.cors;
    const o: { -readonly [K in keyof CorsOverride]: CorsOverride[K] } = {};
    if (c.enable !== undefined) o.enable = c.enable;
    if (c.allow_origins !== undefined) o.allowOrigins = c.allow_origins;
    if (c.allow_methods !== undefined) o.allowMethods = c.allow_methods;
    if (c.allow_headers !== undefined) o.allowHeaders = c.allow_headers;
    if (c.allow_credentials !== undefined) o.allowCredentials = c.allow_credentials;
    cors = Object.freeze(o);
  }

  let mediation: ApiMediation | undefined;
  if (t.mediation !== undefined) {
    const m = t.mediation;
    let script: string | undefined;
    if (m.script !== undefined) {
      // Relative to the API file; an API given in code resolves against the working directory. Confined
      // to the configuration directory and script_dirs after links are resolved (mediation/script-path.ts).
      const place = placeScript(path.resolve(file === '' ? process.cwd() : path.dirname(file), m.script), ctx.scriptDirs);
      if (place.ok) script = place.real;
      else if (place.missing)
        ctx.r.report('error', 'API_VALUE', ['mediation', 'script'], place.problem, 'a JavaScript file with onRequest');
      else
        ctx.r.report(
          'error',
          'API_SCRIPT_PATH',
          ['mediation', 'script'],
          place.problem,
          `a file under ${(ctx.scriptDirs ?? []).join(' or ')}`,
        );
    }
    mediation = Object.freeze({
      script,
      requestFormat: m.request_format,
      responseFormat: m.response_format,
    });
  }

  // A GraphQL API without resources is served at its context and every path under it, by GET and POST.
  if (apiType === 'GRAPHQL' && resources.length === 0)
    resources.push(
      Object.freeze({
        path: '/*',
        methods: ['GET', 'POST'],
        auth: apiAuth,
        scopes: [],
        tokenType: 'any',
        policy: undefined,
        unauthenticatedPolicy: undefined,
      }),
    );
  // A gRPC API without resources serves every method of its .proto files with the API's settings.
  if (apiType === 'GRPC' && resourcesRaw.length === 0 && grpc !== undefined)
    for (const m of grpc.methods.values())
      resources.push(
        Object.freeze({
          path: m.path,
          methods: ['POST'],
          auth: apiAuth,
          scopes: [],
          tokenType: 'any',
          policy: undefined,
          unauthenticatedPolicy: undefined,
        }),
      );
  const graphql = graphqlOf(ctx, t, file, apiType, policies);
  const definition = definitionOf(ctx, t.definition, file);
  const attached = pluginsOf(ctx, t.plugins, ['plugins']);

  if (ctx.r.errors > 0 || production === null || sandbox === null) return { api: undefined, diagnostics: ctx.r.diagnostics };
  reportNotEnforced(ctx, raw);
  const api: ApiDefinition = {
    file,
    name: t.name,
    context,
    version,
    defaultVersion: t.default_version,
    state: t.state,
    type: apiType,
    auth: apiAuth,
    mutualSsl: t.mutual_ssl,
    labels: t.labels,
    policy: t.policy,
    unauthenticatedPolicy: t.unauthenticated_policy,
    description: t.description,
    definition,
    endpoints: Object.freeze({ production, sandbox }),
    cors,
    resources: Object.freeze(resources),
    scopes: Object.freeze(t.scopes.map((d) => Object.freeze({ name: d.name, description: d.description, roles: d.roles }))),
    mediation,
    ...(graphql !== undefined ? { graphql } : {}),
    ...(grpc !== undefined ? { grpc } : {}),
    ...(attached != null ? { plugins: attached } : {}),
  };
  return { api: Object.freeze(api), diagnostics: ctx.r.diagnostics };
}

/** Parses and validates one API definition file's text (`served`: the files given with it, ServedFiles). */
export function parseApiText(
  text: string,
  file: string,
  vars: ApiVars = {},
  policies?: PolicyNames,
  scriptDirs?: readonly string[],
  served?: ServedFiles | null,
  plugins?: PluginCatalogue,
): ApiParseResult {
  const parsed = parseDocument(text, file, API_CODES);
  if (!parsed.ok) return { api: undefined, diagnostics: [parsed.diagnostic] };
  return validateApi(parsed.doc, file, vars, parsed.map, policies, scriptDirs, served, plugins);
}

/** The gRPC services an API serves: those of its resources' methods ("package.Service"); none for other types. */
export function grpcServicesOf(api: Pick<ApiDefinition, 'grpc' | 'resources'>): readonly string[] {
  if (api.grpc === undefined) return [];
  return [...new Set(api.resources.map((r) => r.path.slice(1, r.path.lastIndexOf('/'))))];
}

/** The versioned context path an API is invoked at: /pizzashack/1.0.0, or the {version} placed. */
export function versionedPath(api: Pick<ApiDefinition, 'context' | 'version'>): string {
  return api.context.includes('{version}') ? api.context.replace('{version}', api.version) : `${api.context}/${api.version}`;
}

/** The path of default-version routing: the context without the version segment. */
export function defaultPath(api: Pick<ApiDefinition, 'context'>): string {
  if (!api.context.includes('{version}')) return api.context;
  const p = api.context.replace('/{version}', '').replace('{version}', '');
  return p === '' ? '/' : p;
}

/** Whether an API is deployed on a gateway with these labels ([apim.sync_runtime_artifacts.gateway]). */
export function labelsMatch(api: Pick<ApiDefinition, 'labels'>, gatewayLabels: readonly string[]): boolean {
  return api.labels.some((l) => gatewayLabels.includes(l));
}

/**
 * The scopes an API declares, each with the roles allowed to hold it and the API (for the subscription
 * check of a scope without roles): every [[scopes]] entry and every scope a resource or a GraphQL
 * operation lists (docs/security.md).
 */
export function apiScopeBindings(
  api: Pick<ApiDefinition, 'context' | 'version' | 'scopes' | 'resources' | 'graphql'>,
): { name: string; roles: readonly string[]; api: { context: string; version: string } }[] {
  const roles = new Map<string, readonly string[]>();
  for (const s of api.scopes) roles.set(s.name, s.roles);
  for (const r of api.resources) for (const s of r.scopes) if (!roles.has(s)) roles.set(s, []);
  for (const r of api.graphql?.rules.values() ?? []) for (const s of r.scopes) if (!roles.has(s)) roles.set(s, []);
  return [...roles].map(([name, r]) => ({ name, roles: r, api: { context: api.context, version: api.version } }));
}
