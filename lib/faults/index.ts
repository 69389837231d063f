/**
 * The one table of fault codes the gateway answers with, and the one place that turns a fault into a
 * response (spec 002, part 7).
 *
 * Three families, one table each way they are keyed:
 *  - API handler codes of the spec (700700, 900422, 900424, 900800–900807, 900900–900911, 102511), keyed by
 *    their number: they do not collide;
 *  - transport codes, keyed by what happened (FaultReason), imported from lib/transport/codes.ts rather
 *    than copied: their combined numbers collide (101507 is both "canceled" and "timeout at state 3"), so
 *    they are never looked up by number alone;
 *  - throughway's own codes for conditions the spec has no code for. The range starts at 103001; the
 *    transport holds 103001–103004 (OwnCode), the gateway continues from 103005 in GATEWAY_FAULTS below.
 *    One block per area, so that each area's codes stay together: 103005–103019 routing and endpoints,
 *    103020–103039 security, 103040–103059 throttling, 103060–103079 mediation, 103080–103099 TLS,
 *    proxies and WebSocket, 103100–103119 scale-out, 103120–103139 operations, 103140–103159 embedding,
 *    103160–103179 the transport's request framing, deadlines and interim cap (OwnCode), 103180–103199 GraphQL,
 *    103200–103209 backend security, 103210–103229 gRPC.
 *
 * docs/faults.md is generated from these tables (scripts/gen-gateway-docs.ts) and a test fails when a code is
 * missing from it or the page is stale.
 */
import { FAULT_KINDS, OwnCode, type FaultReason, type TransportFault } from '../transport/codes';
import type { LocalResponse } from '../transport/types';
import type { FaultTemplates } from './templates';
import { InternalError } from '../errors';

/** Where a code comes from: the spec's tables, or throughway's own range. */
export type FaultOrigin = 'spec' | 'throughway';

/** The gateway phase (or other area: transport, embedding) that raises a code. */
export type FaultPhase =
  'route' | 'cors' | 'api-status' | 'authentication' | 'throttling' | 'mediation' | 'send' | 'transport' | 'embedding' | 'none';

export interface GatewayFaultDef {
  readonly code: number;
  readonly httpStatus: number;
  /** 'spec': the spec gives this HTTP status; 'throughway': the spec shows none, throughway chose it. */
  readonly statusFrom: FaultOrigin;
  readonly message: string;
  readonly description: string;
  readonly origin: FaultOrigin;
  readonly phase: FaultPhase;
  /** Adds a `WWW-Authenticate: Bearer` challenge (RFC 6750 §3); the value is the RFC's error code, '' for none. */
  readonly challenge?: '' | 'invalid_token' | 'insufficient_scope' | 'invalid_request';
  /** A throttling fault: carries `nextAccessTime` in the body and `Retry-After` when the time is known. */
  readonly throttle?: boolean;
  /** Whether throughway sends it at all (deprecated and unexplained codes are documented, never sent). */
  readonly sent: boolean;
  /** Which step of the plan makes the gateway raise it, when that step has not landed yet. */
  readonly pending?: string;
}

/** The gateway's own codes: 103005 onwards (the transport holds 103001–103004). */
export const GatewayOwnCode = {
  API_NOT_FOUND: 103005,
  METHOD_NOT_ALLOWED: 103006,
  ENDPOINT_SUSPENDED: 103007,
  API_RETIRED: 103008,
  INVALID_PATH: 103009,
  // Tenants (docs/tenants.md): the routing block's next codes.
  TENANT_UNKNOWN: 103010,
  TENANT_INACTIVE: 103011,
  TENANT_BANDWIDTH: 103012,
  // Mediation (lib/mediation): 103060–103079; 103064 (global timeout) is the transport's (OwnCode.GLOBAL_TIMEOUT)
  MEDIATION_QUEUE_FULL: 103060,
  MEDIATION_BODY_TOO_LARGE: 103061,
  MALFORMED_JSON: 103062,
  MALFORMED_XML: 103063,
  SCRIPT_FAILED: 103065,
  SCRIPT_TIMEOUT: 103066,
  SCRIPT_RESOURCE_LIMIT: 103067,
  CONVERSION_FAILED: 103068,
  MEDIATION_FAILED: 103069,
  MALFORMED_MULTIPART: 103070,
  MALFORMED_BACKEND_PAYLOAD: 103071,
  /** TLS, proxies and WebSocket (103080-103099; the transport holds 103080-103082). */
  WEBSOCKET_UPGRADE_REQUIRED: 103083,
  // GraphQL APIs (lib/graphql, docs/graphql.md): 103180-103199.
  GRAPHQL_INVALID: 103180,
  GRAPHQL_TOO_DEEP: 103181,
  GRAPHQL_TOO_COMPLEX: 103182,
  GRAPHQL_INTROSPECTION: 103183,
  GRAPHQL_BAD_REQUEST: 103184,
  GRAPHQL_MUTATION_BY_GET: 103185,
  GRAPHQL_TOO_LARGE: 103186,
  GRAPHQL_SUBSCRIPTION_BY_HTTP: 103187,
  GRAPHQL_AMBIGUOUS: 103188,
  // Embedding (lib/embed): 103140-103159.
  UPGRADE_NOT_TUNNELLED: 103140,
  EMBEDDED_RESPONSE_INCOMPLETE: 103141,
  CUSTOM_PHASE_FAILED: 103142,
  EMBEDDED_BODY_CONSUMED: 103143,
  // Backend security (lib/security/backend-credentials.ts): 103200-103209.
  BACKEND_CREDENTIALS_REFUSED: 103200,
  BACKEND_CHALLENGE_UNANSWERED: 103201,
  BACKEND_CREDENTIALS_UNBOUND: 103202,
  // gRPC APIs (docs/grpc.md): 103210-103229.
  GRPC_REQUIRED: 103210,
  GRPC_DEADLINE_EXCEEDED: 103211,
  GRPC_BACKEND_RESPONSE: 103212,
} as const;

/** The spec's API handler codes, by name. */
export const ApiCode = {
  API_BLOCKED: 700700,
  INVALID_GRAPHQL_QUERY: 900422,
  TEMPORARY_SERVER_ERROR: 900424,
  THROTTLED_OUT: 900800,
  HARD_LIMIT_EXCEEDED: 900801,
  RESOURCE_THROTTLED: 900802,
  APPLICATION_THROTTLED: 900803,
  SUBSCRIPTION_THROTTLED: 900804,
  BLOCKED: 900805,
  CUSTOM_POLICY_THROTTLED: 900806,
  BURST_THROTTLED: 900807,
  AUTH_GENERAL_ERROR: 900900,
  INVALID_CREDENTIALS: 900901,
  MISSING_CREDENTIALS: 900902,
  ACCESS_TOKEN_INACTIVE: 900904,
  INCORRECT_TOKEN_TYPE: 900905,
  NO_MATCHING_RESOURCE: 900906,
  API_TEMPORARILY_BLOCKED: 900907,
  RESOURCE_FORBIDDEN: 900908,
  SUBSCRIPTION_INACTIVE: 900909,
  INVALID_SCOPE: 900910,
  UNDOCUMENTED_AUTH_FAILURE: 900911,
  INCOMPLETE_PAYLOAD: 102511,
} as const;

export type GatewayCode = (typeof ApiCode)[keyof typeof ApiCode] | (typeof GatewayOwnCode)[keyof typeof GatewayOwnCode];

/**
 * Every API handler code of spec 002 part 7 and every own gateway code. Messages are the spec's; where the
 * spec gives no HTTP status (900424) throughway's choice is marked `statusFrom: 'throughway'`.
 */
export const GATEWAY_FAULTS: readonly GatewayFaultDef[] = Object.freeze([
  // --- lifecycle (spec 002, part 3: "Invoking an API in BLOCKED yields error 700700 (HTTP 503)")
  {
    code: 700700,
    httpStatus: 503,
    statusFrom: 'spec',
    message: 'API blocked',
    description: 'The API is in the BLOCKED lifecycle state',
    origin: 'spec',
    phase: 'api-status',
    sent: true,
  },
  // --- payload and query
  {
    code: 900422,
    httpStatus: 422,
    statusFrom: 'spec',
    message: 'Invalid GraphQL query',
    description:
      "The query of a GraphQL API is not valid syntax (the description names the parser's message and line:column), or has more tokens than the API's max_tokens",
    origin: 'spec',
    phase: 'route',
    sent: true,
  },
  // No status in the spec: 503, as the reference answers its other "Temporary Server Error" conditions; the
  // client's call may succeed later, once the token endpoint answers (docs/apis.md, "Backend security").
  {
    code: 900424,
    httpStatus: 503,
    statusFrom: 'throughway',
    message: 'Temporary Server Error',
    description:
      'No valid OAuth 2.0 token for the protected backend: the token endpoint is unreachable, too slow or refused the request, or the backend refused a freshly obtained token',
    origin: 'spec',
    phase: 'send',
    sent: true,
  },
  // Not sent: throughway gathers a body it mediates before answering, so the spec's condition becomes 103061
  // (413, over the mediation limit) or 101001 + state (the client ended mid-request); the code keeps its meaning.
  {
    code: 102511,
    httpStatus: 400,
    statusFrom: 'spec',
    message: 'Incomplete payload',
    description: 'The payload is too large for the client to keep the connection until it is fully transferred',
    origin: 'spec',
    phase: 'none',
    sent: false,
  },
  // --- throttling (spec 002, part 7: 900800 to 900807 apply when throttling limits are reached)
  {
    code: 900800,
    httpStatus: 429,
    statusFrom: 'spec',
    message: 'Message throttled out',
    description: 'The tier limit of requests per period was reached',
    origin: 'spec',
    phase: 'throttling',
    throttle: true,
    sent: true,
  },
  {
    code: 900801,
    httpStatus: 503,
    statusFrom: 'spec',
    message: 'Hard limit exceeded',
    description: 'The hard throttle limit was reached',
    origin: 'spec',
    phase: 'throttling',
    throttle: true,
    sent: true,
  },
  {
    code: 900802,
    httpStatus: 429,
    statusFrom: 'spec',
    message: 'Resource level throttle out',
    description: 'The resource level limit was exceeded',
    origin: 'spec',
    phase: 'throttling',
    throttle: true,
    sent: true,
  },
  {
    code: 900803,
    httpStatus: 429,
    statusFrom: 'spec',
    message: 'Application level throttle out',
    description: 'The application level limit was exceeded',
    origin: 'spec',
    phase: 'throttling',
    throttle: true,
    sent: true,
  },
  {
    code: 900804,
    httpStatus: 429,
    statusFrom: 'spec',
    message: 'Subscription level throttled out',
    description: 'The subscription policy limit was reached',
    origin: 'spec',
    phase: 'throttling',
    throttle: true,
    sent: true,
  },
  {
    code: 900805,
    httpStatus: 429,
    statusFrom: 'spec',
    message: 'Message blocked',
    description: 'Blocked by a blocking condition on the user, IP address, application or API context',
    origin: 'spec',
    phase: 'throttling',
    throttle: true,
    sent: true,
  },
  {
    code: 900806,
    httpStatus: 429,
    statusFrom: 'spec',
    message: 'Custom policy throttled out',
    description: 'A custom throttling policy limit was exceeded',
    origin: 'spec',
    phase: 'throttling',
    throttle: true,
    sent: true,
  },
  {
    code: 900807,
    httpStatus: 429,
    statusFrom: 'spec',
    message: 'Message throttled out',
    description: 'The burst control or rate limit (requests per second) of the subscription policy was exceeded',
    origin: 'spec',
    phase: 'throttling',
    throttle: true,
    sent: true,
  },
  // --- authentication (spec 002, part 5)
  {
    code: 900900,
    httpStatus: 500,
    statusFrom: 'spec',
    message: 'Unclassified authentication failure',
    description: 'Authentication failed for a reason other than the credentials, e.g. the key validation service is unreachable',
    origin: 'spec',
    phase: 'authentication',
    challenge: '',
    sent: true,
  },
  {
    code: 900901,
    httpStatus: 401,
    statusFrom: 'spec',
    message: 'Invalid credentials',
    description: 'The access token is invalid, inactive or expired, or the key type has no matching endpoint',
    origin: 'spec',
    phase: 'authentication',
    challenge: 'invalid_token',
    sent: true,
  },
  {
    code: 900902,
    httpStatus: 401,
    statusFrom: 'spec',
    message: 'Missing credentials',
    description: 'No bearer access token in the authorization header',
    origin: 'spec',
    phase: 'authentication',
    challenge: '',
    sent: true,
  },
  {
    code: 900904,
    httpStatus: 401,
    statusFrom: 'spec',
    message: 'Access token inactive',
    description: 'Deprecated from version 1.9.0 (spec 002, part 9); 900901 is sent instead',
    origin: 'spec',
    phase: 'none',
    challenge: 'invalid_token',
    sent: false,
  },
  {
    code: 900905,
    httpStatus: 401,
    statusFrom: 'spec',
    message: 'Incorrect access token type',
    description: 'An application token on a resource that allows only user tokens',
    origin: 'spec',
    phase: 'authentication',
    challenge: 'invalid_token',
    sent: true,
  },
  {
    code: 900906,
    httpStatus: 403,
    statusFrom: 'spec',
    message: 'No matching resource found in the API for the given request',
    description: 'The API has no resource matching the request path',
    origin: 'spec',
    phase: 'route',
    sent: true,
  },
  {
    code: 900907,
    httpStatus: 401,
    statusFrom: 'spec',
    message: 'The requested API is temporarily blocked',
    description: 'The subscription to the API is blocked',
    origin: 'spec',
    phase: 'authentication',
    challenge: 'invalid_token',
    sent: true,
  },
  {
    code: 900908,
    httpStatus: 403,
    statusFrom: 'spec',
    message: 'Resource forbidden',
    description: 'The application is not subscribed to the API',
    origin: 'spec',
    phase: 'authentication',
    challenge: '',
    sent: true,
  },
  {
    code: 900909,
    httpStatus: 401,
    statusFrom: 'spec',
    message: 'The subscription to the API is inactive',
    description: 'The subscription is not approved, or the API is in an unavailable state',
    origin: 'spec',
    phase: 'authentication',
    challenge: 'invalid_token',
    sent: true,
  },
  {
    code: 900910,
    httpStatus: 403,
    statusFrom: 'spec',
    message: 'The access token does not allow access to the resource',
    description: 'The access token lacks a scope the resource requires',
    origin: 'spec',
    phase: 'authentication',
    challenge: 'insufficient_scope',
    sent: true,
  },
  {
    code: 900911,
    httpStatus: 401,
    statusFrom: 'spec',
    message: 'Authentication failure',
    description: 'Listed by the spec under HTTP 401 without its meaning (spec 002, part 7); throughway does not send it',
    origin: 'spec',
    phase: 'none',
    challenge: 'invalid_token',
    sent: false,
  },
  // --- throughway's own (103005 onwards)
  {
    code: GatewayOwnCode.API_NOT_FOUND,
    httpStatus: 404,
    statusFrom: 'throughway',
    message: 'No matching API',
    description: 'No API is deployed at the requested context and version',
    origin: 'throughway',
    phase: 'route',
    sent: true,
  },
  {
    code: GatewayOwnCode.METHOD_NOT_ALLOWED,
    httpStatus: 405,
    statusFrom: 'throughway',
    message: 'Method not allowed',
    description: 'The resource exists but does not allow this method (the Allow field lists the ones it does)',
    origin: 'throughway',
    phase: 'route',
    sent: true,
  },
  {
    code: GatewayOwnCode.ENDPOINT_SUSPENDED,
    httpStatus: 503,
    statusFrom: 'throughway',
    message: 'Endpoint suspended',
    description: 'The backend endpoint is suspended after failing with one of its suspend codes (Retry-After gives the seconds left)',
    origin: 'throughway',
    phase: 'send',
    sent: true,
  },
  {
    code: GatewayOwnCode.API_RETIRED,
    httpStatus: 404,
    statusFrom: 'throughway',
    message: 'API retired',
    description: 'The API is in the RETIRED lifecycle state',
    origin: 'throughway',
    phase: 'api-status',
    sent: true,
  },
  {
    code: GatewayOwnCode.WEBSOCKET_UPGRADE_REQUIRED,
    httpStatus: 400,
    statusFrom: 'throughway',
    message: 'WebSocket handshake required',
    description:
      'The API is a WebSocket API (type = "WS"): call it with an Upgrade: websocket handshake (RFC 6455 §4.1). Not 426: a 426 must carry an Upgrade field, which is hop-by-hop and never set on a local answer',
    origin: 'throughway',
    phase: 'route',
    sent: true,
  },
  {
    code: GatewayOwnCode.INVALID_PATH,
    httpStatus: 400,
    statusFrom: 'throughway',
    message: 'Invalid request path',
    description: 'The request target is not an absolute path, or contains a dot segment (. or ..) that could escape the API context',
    origin: 'throughway',
    phase: 'route',
    sent: true,
  },
  {
    code: GatewayOwnCode.TENANT_UNKNOWN,
    httpStatus: 404,
    statusFrom: 'throughway',
    message: 'No such tenant',
    description: 'The request path starts with /t/<domain>/ and no tenant has that domain (docs/tenants.md)',
    origin: 'throughway',
    phase: 'route',
    sent: true,
  },
  {
    code: GatewayOwnCode.TENANT_INACTIVE,
    httpStatus: 503,
    statusFrom: 'throughway',
    message: 'Tenant inactive',
    description: 'The API belongs to a tenant the super admin has deactivated (docs/tenants.md)',
    origin: 'throughway',
    phase: 'route',
    sent: true,
  },
  {
    code: GatewayOwnCode.TENANT_BANDWIDTH,
    httpStatus: 429,
    statusFrom: 'throughway',
    message: 'Tenant bandwidth used up',
    description:
      'The API\'s tenant has had its billing package\'s bandwidth.limit of bytes through the gateway this calendar month (docs/tenants.md, "Billing packages")',
    origin: 'throughway',
    phase: 'route',
    sent: true,
  },
  {
    code: GatewayOwnCode.MEDIATION_QUEUE_FULL,
    httpStatus: 503,
    statusFrom: 'throughway',
    message: 'Mediation queue full',
    description: 'Every mediation worker thread is busy and the queue is at [mediation] engine.threads_queue_length',
    origin: 'throughway',
    phase: 'mediation',
    sent: true,
  },
  {
    code: GatewayOwnCode.MEDIATION_BODY_TOO_LARGE,
    httpStatus: 413,
    statusFrom: 'throughway',
    message: 'Payload too large for mediation',
    description: 'The request body exceeds [throughway.mediation] max_body, the most a mediated call gathers',
    origin: 'throughway',
    phase: 'mediation',
    sent: true,
  },
  {
    code: GatewayOwnCode.MALFORMED_JSON,
    httpStatus: 400,
    statusFrom: 'throughway',
    message: 'Malformed JSON payload',
    description: 'The JSON request body is not valid JSON (the description names the line and column)',
    origin: 'throughway',
    phase: 'mediation',
    sent: true,
  },
  {
    code: GatewayOwnCode.MALFORMED_XML,
    httpStatus: 400,
    statusFrom: 'throughway',
    message: 'Malformed XML payload',
    description: 'The XML request body is not well-formed (the description names the line and column)',
    origin: 'throughway',
    phase: 'mediation',
    sent: true,
  },
  {
    code: GatewayOwnCode.SCRIPT_FAILED,
    httpStatus: 500,
    statusFrom: 'throughway',
    message: 'Script mediation failed',
    description: "The API's script threw, returned something that is not a change set, or could not be loaded",
    origin: 'throughway',
    phase: 'mediation',
    sent: true,
  },
  {
    code: GatewayOwnCode.SCRIPT_TIMEOUT,
    httpStatus: 500,
    statusFrom: 'throughway',
    message: 'Script timed out',
    description: "The API's script ran longer than [throughway.mediation] script_timeout and was stopped",
    origin: 'throughway',
    phase: 'mediation',
    sent: true,
  },
  {
    code: GatewayOwnCode.SCRIPT_RESOURCE_LIMIT,
    httpStatus: 500,
    statusFrom: 'throughway',
    message: 'Script exceeded its resource limits',
    description: 'The worker thread running the script ran out of heap ([throughway.mediation] worker_heap_mb) and was ended',
    origin: 'throughway',
    phase: 'mediation',
    sent: true,
  },
  {
    code: GatewayOwnCode.CONVERSION_FAILED,
    httpStatus: 400,
    statusFrom: 'throughway',
    message: 'Payload conversion failed',
    description: 'The request body could not be converted between JSON and XML',
    origin: 'throughway',
    phase: 'mediation',
    sent: true,
  },
  {
    code: GatewayOwnCode.MEDIATION_FAILED,
    httpStatus: 500,
    statusFrom: 'throughway',
    message: 'Mediation failed',
    description: 'Mediation could not run (its worker thread failed, or the request body could not be read)',
    origin: 'throughway',
    phase: 'mediation',
    sent: true,
  },
  {
    code: GatewayOwnCode.MALFORMED_MULTIPART,
    httpStatus: 400,
    statusFrom: 'throughway',
    message: 'Malformed multipart payload',
    description:
      'A multipart/form-data request body a script was to read has no boundary parameter, no closing boundary, a part without CRLF framing, more than 1000 parts or a part header block over 8 KiB (RFC 2046 §5.1)',
    origin: 'throughway',
    phase: 'mediation',
    sent: true,
  },
  {
    code: GatewayOwnCode.MALFORMED_BACKEND_PAYLOAD,
    httpStatus: 502,
    statusFrom: 'throughway',
    message: 'Malformed backend payload',
    description:
      "The backend's response body, gathered for a script or a response conversion, is not valid JSON or XML under [passthru_http] force_json_validation / force_xml_validation, or not valid multipart (the description names the position)",
    origin: 'throughway',
    phase: 'mediation',
    sent: true,
  },
  {
    code: GatewayOwnCode.GRAPHQL_INVALID,
    httpStatus: 400,
    statusFrom: 'throughway',
    message: 'GraphQL query does not validate',
    description:
      "The query parses but does not validate against the API's schema (GraphQL spec §5): the description lists the errors (at most 10) with their line:column",
    origin: 'throughway',
    phase: 'route',
    sent: true,
  },
  {
    code: GatewayOwnCode.GRAPHQL_TOO_DEEP,
    httpStatus: 400,
    statusFrom: 'throughway',
    message: 'GraphQL query too deep',
    description: "The selected operation nests deeper than the API's [graphql] max_depth",
    origin: 'throughway',
    phase: 'route',
    sent: true,
  },
  {
    code: GatewayOwnCode.GRAPHQL_TOO_COMPLEX,
    httpStatus: 400,
    statusFrom: 'throughway',
    message: 'GraphQL query too complex',
    description: "The selected operation selects more fields than the API's [graphql] max_complexity",
    origin: 'throughway',
    phase: 'route',
    sent: true,
  },
  {
    code: GatewayOwnCode.GRAPHQL_INTROSPECTION,
    httpStatus: 403,
    statusFrom: 'throughway',
    message: 'GraphQL introspection not allowed',
    description: 'The query asks for __schema or __type and the API has [graphql] introspection = false',
    origin: 'throughway',
    phase: 'route',
    sent: true,
  },
  {
    code: GatewayOwnCode.GRAPHQL_BAD_REQUEST,
    httpStatus: 400,
    statusFrom: 'throughway',
    message: 'Invalid GraphQL request',
    description:
      'The request carries no query the GraphQL-over-HTTP way (GET ?query=, POST application/json {"query"} or application/graphql), or operationName names no operation of it',
    origin: 'throughway',
    phase: 'route',
    sent: true,
  },
  {
    code: GatewayOwnCode.GRAPHQL_MUTATION_BY_GET,
    httpStatus: 405,
    statusFrom: 'throughway',
    message: 'GraphQL mutation by GET',
    description: 'A mutation sent by GET (GraphQL over HTTP: GET is for queries only); send it by POST (the Allow field says so)',
    origin: 'throughway',
    phase: 'route',
    sent: true,
  },
  {
    code: GatewayOwnCode.GRAPHQL_TOO_LARGE,
    httpStatus: 413,
    statusFrom: 'throughway',
    message: 'GraphQL request too large',
    description: "The request body or query string is larger than the API's [graphql] max_query_bytes",
    origin: 'throughway',
    phase: 'route',
    sent: true,
  },
  {
    code: GatewayOwnCode.GRAPHQL_SUBSCRIPTION_BY_HTTP,
    httpStatus: 400,
    statusFrom: 'throughway',
    message: 'GraphQL subscription needs a WebSocket',
    description:
      'A subscription sent as a plain HTTP request: open a WebSocket with the graphql-transport-ws sub-protocol instead (docs/graphql.md)',
    origin: 'throughway',
    phase: 'route',
    sent: true,
  },
  {
    code: GatewayOwnCode.GRAPHQL_AMBIGUOUS,
    httpStatus: 400,
    statusFrom: 'throughway',
    message: 'Ambiguous GraphQL request',
    description:
      'A backend could read another query than the one the gateway judged: GraphQL parameters in the URL of a POST, a parameter repeated or spelled otherwise in the query string, a JSON key twice in one object, a body on a GET, a charset other than UTF-8 (docs/graphql.md)',
    origin: 'throughway',
    phase: 'route',
    sent: true,
  },
  // Not sent since the transport tunnels upgrades (docs/websocket.md): handleUpgrade hands every upgrade over.
  {
    code: GatewayOwnCode.UPGRADE_NOT_TUNNELLED,
    httpStatus: 501,
    statusFrom: 'throughway',
    message: 'Upgrade not supported',
    description:
      'Not sent: handleUpgrade() hands every upgrade to the transport, which tunnels WebSocket handshakes to WS APIs and answers other upgrades as plain calls (RFC 9110 §7.8); the code stays reserved',
    origin: 'throughway',
    phase: 'none',
    sent: false,
  },
  {
    code: GatewayOwnCode.EMBEDDED_RESPONSE_INCOMPLETE,
    httpStatus: 502,
    statusFrom: 'throughway',
    message: 'Incomplete response',
    description: 'The gateway closed the in-process connection of the (req, res) handler before a response head',
    origin: 'throughway',
    phase: 'embedding',
    sent: true,
  },
  {
    code: GatewayOwnCode.CUSTOM_PHASE_FAILED,
    httpStatus: 500,
    statusFrom: 'throughway',
    message: 'Custom phase failed',
    description: 'A phase added by the embedding application threw or rejected',
    origin: 'throughway',
    phase: 'embedding',
    sent: true,
  },
  {
    code: GatewayOwnCode.EMBEDDED_BODY_CONSUMED,
    httpStatus: 500,
    statusFrom: 'throughway',
    message: 'Request body already read',
    description: 'The application read the request body (a body parser ran) before handing the request to the (req, res) handler',
    origin: 'throughway',
    phase: 'embedding',
    sent: true,
  },
  {
    code: GatewayOwnCode.BACKEND_CREDENTIALS_REFUSED,
    httpStatus: 502,
    statusFrom: 'throughway',
    message: 'Backend credentials refused',
    description:
      'The backend answered 401 to the endpoint\'s Basic or Digest credentials (docs/apis.md, "Backend security"): the API file\'s credentials are wrong for it',
    origin: 'throughway',
    phase: 'send',
    sent: true,
  },
  {
    code: GatewayOwnCode.BACKEND_CHALLENGE_UNANSWERED,
    httpStatus: 503,
    statusFrom: 'throughway',
    message: 'Backend challenge not answered',
    description:
      'The backend asked for Digest credentials with a new nonce and the request body was streamed (chunked, or above max_replay_body), so the call could not be sent again; the nonce is kept and the next call answers it',
    origin: 'throughway',
    phase: 'send',
    sent: true,
  },
  {
    code: GatewayOwnCode.BACKEND_CREDENTIALS_UNBOUND,
    httpStatus: 500,
    statusFrom: 'throughway',
    message: 'Backend credentials not bound to this origin',
    description:
      'The call would go to an origin (scheme, host, port) other than the one the endpoint\'s credentials are bound to (docs/apis.md, "Backend security"): it is not sent, and no credential leaves the gateway',
    origin: 'throughway',
    phase: 'send',
    sent: true,
  },
  // --- gRPC APIs (docs/grpc.md); their calls get these, like every fault, as gRPC statuses (docs/faults.md)
  {
    code: GatewayOwnCode.GRPC_REQUIRED,
    httpStatus: 415,
    statusFrom: 'throughway',
    message: 'gRPC over HTTP/2 required',
    description:
      'A call to a gRPC API that is not a gRPC call over HTTP/2 (content-type application/grpc): its methods cannot be called over HTTP/1.1 (gRPC needs trailers), and 415 is what gRPC answers a request of another content type',
    origin: 'throughway',
    phase: 'send',
    sent: true,
  },
  {
    code: GatewayOwnCode.GRPC_DEADLINE_EXCEEDED,
    httpStatus: 504,
    statusFrom: 'throughway',
    message: 'Deadline exceeded',
    description:
      "The call's grpc-timeout (or the endpoint's timeout) passed before the backend finished: the gateway cancelled the backend's stream (RST_STREAM CANCEL) and answered DEADLINE_EXCEEDED",
    origin: 'throughway',
    phase: 'send',
    sent: true,
  },
  {
    code: GatewayOwnCode.GRPC_BACKEND_RESPONSE,
    httpStatus: 502,
    statusFrom: 'throughway',
    message: 'Invalid gRPC backend response',
    description:
      "The gRPC backend reset the call's stream, or ended it without a grpc-status: the call ends with the status of the reset code (grpc/grpc doc/PROTOCOL-HTTP2.md) or INTERNAL",
    origin: 'throughway',
    phase: 'send',
    sent: true,
  },
] satisfies readonly GatewayFaultDef[]);

const BY_CODE = new Map<number, GatewayFaultDef>();
for (const def of GATEWAY_FAULTS) {
  if (BY_CODE.has(def.code)) throw new InternalError(`fault code ${def.code} is listed twice`);
  BY_CODE.set(def.code, def);
}

export function faultDef(code: number): GatewayFaultDef | undefined {
  return BY_CODE.get(code);
}

/** Every own code in use, the transport's and the gateway's, in one ascending list (docs, tests). */
export function ownCodes(): number[] {
  return [...Object.values(OwnCode), ...Object.values(GatewayOwnCode)].sort((a, b) => a - b);
}

/** Transport faults by reason, re-exported so the gateway's docs and tests read one module. */
export const TRANSPORT_FAULTS: { readonly [R in FaultReason]: (typeof FAULT_KINDS)[R] } = FAULT_KINDS;

/** One occurrence of a gateway fault, as a phase returns it. */
export interface FaultValue {
  readonly def: GatewayFaultDef;
  /** What identifies this occurrence (replaces the table's description). */
  readonly description?: string;
  /** Throttling and suspension: ms until the client may try again (Retry-After, nextAccessTime). */
  readonly retryAfterMs?: number;
  /** 405: the methods the resource allows (the Allow field, RFC 9110 §15.5.6). */
  readonly allow?: string;
  /** 900910: the scope the resource needs (RFC 6750 §3 `scope` attribute). */
  readonly scope?: string;
}

export function fault(code: GatewayCode, extra?: Omit<FaultValue, 'def'>): FaultValue {
  const def = BY_CODE.get(code);
  if (def === undefined) throw new InternalError(`unknown fault code ${code}`);
  return extra === undefined ? { def } : { def, ...extra };
}

/** What a fault response is built from, for either family. */
export interface FaultFacts {
  readonly code: number;
  /** Transport faults: the base code (templates match it for all states); gateway faults: the code. */
  readonly base: number;
  /** Transport faults: the protocol state number; gateway faults: -1. */
  readonly state: number;
  readonly status: number;
  readonly message: string;
  readonly description: string;
  readonly challenge?: '' | 'invalid_token' | 'insufficient_scope' | 'invalid_request';
  readonly scope?: string;
  readonly retryAfterMs?: number;
  readonly nextAccessTime?: string;
  readonly allow?: string;
}

/** The realm of the bearer challenge (RFC 6750 §3). */
export const AUTH_REALM = 'throughway';

const JSON_TYPE = 'application/json; charset=UTF-8';

/** The response fields a fault carries besides its body: challenge, Retry-After, Allow (RFC 9110, RFC 6750). */
function protocolFields(f: FaultFacts, out: string[]): void {
  if (f.challenge !== undefined) {
    let v = `Bearer realm="${AUTH_REALM}"`;
    if (f.challenge !== '') v += `, error="${f.challenge}"`;
    if (f.scope !== undefined && f.challenge === 'insufficient_scope') v += `, scope="${f.scope.replace(/["\\]/g, '')}"`;
    out.push('WWW-Authenticate', v);
  }
  if (f.retryAfterMs !== undefined) out.push('Retry-After', String(Math.max(0, Math.ceil(f.retryAfterMs / 1000))));
  if (f.allow !== undefined) out.push('Allow', f.allow);
}

/** The spec's fault body (spec 002, part 7), with `nextAccessTime` for throttling faults. */
export function faultBody(f: FaultFacts): string {
  const inner: Record<string, unknown> = { code: f.code, type: 'Status report', message: f.message, description: f.description };
  if (f.nextAccessTime !== undefined) inner.nextAccessTime = f.nextAccessTime;
  return JSON.stringify({ fault: inner });
}

/**
 * Renders a fault once: the spec's JSON body (or the matching custom template, spec 002 part 7 rule 4),
 * the protocol fields, and `extra` (CORS and echoed request fields) appended. `drop` names fields the
 * transport-headers rules remove from every response (lower-case).
 */
export function renderFacts(
  f: FaultFacts,
  extra: readonly string[],
  templates: FaultTemplates | undefined,
  drop: ReadonlySet<string> | undefined,
): LocalResponse {
  const fields: string[] = [];
  let status = f.status;
  let body: string;
  const template = templates?.find(f.code, f.base);
  if (template !== undefined) {
    const r = template.render(f);
    status = r.status;
    body = r.body;
    fields.push('Content-Type', r.contentType);
  } else {
    body = faultBody(f);
    fields.push('Content-Type', JSON_TYPE);
  }
  protocolFields(f, fields);
  for (let i = 0; i < extra.length; i += 2) fields.push(extra[i] as string, extra[i + 1] as string);
  const headers = drop === undefined || drop.size === 0 ? fields : dropNames(fields, drop);
  return { status, headers, body, faultCode: f.code };
}

function dropNames(fields: readonly string[], drop: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i] as string;
    if (!drop.has(name.toLowerCase())) out.push(name, fields[i + 1] as string);
  }
  return out;
}

/** The facts of a gateway fault occurrence. */
export function gatewayFacts(v: FaultValue, now: number = Date.now()): FaultFacts {
  const def = v.def;
  const facts: { -readonly [K in keyof FaultFacts]: FaultFacts[K] } = {
    code: def.code,
    base: def.code,
    state: -1,
    status: def.httpStatus,
    message: def.message,
    description: v.description ?? def.description,
  };
  if (def.challenge !== undefined) facts.challenge = def.challenge;
  if (v.scope !== undefined) facts.scope = v.scope;
  if (v.retryAfterMs !== undefined) {
    facts.retryAfterMs = v.retryAfterMs;
    if (def.throttle === true) facts.nextAccessTime = new Date(now + v.retryAfterMs).toISOString();
  }
  if (v.allow !== undefined) facts.allow = v.allow;
  return facts;
}

/** The facts of a transport fault: its kind's status and message, code = base + state (spec 002 part 7 rule 1). */
export function transportFacts(t: TransportFault): FaultFacts {
  return { code: t.code, base: t.base, state: t.state, status: t.httpStatus, message: t.message, description: t.description };
}
