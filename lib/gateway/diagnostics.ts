/**
 * Diagnostics of the gateway's own files (API definitions in apis/, the fault templates file): one value
 * per problem, naming file, line and field, printed like the configuration's diagnostics. The value and
 * its printing are the shared document reader's (lib/config/document.ts); the codes are the gateway's.
 */
import {
  type DocumentDiagnostic,
  type DocumentLevel,
  formatDocumentDiagnostic,
  syntaxDiagnostic as documentSyntax,
} from '../config/document';

export type ApiDiagnosticLevel = DocumentLevel;

/** Every code, listed once so docs/apis.md and the tests can enumerate them. */
export const API_DIAGNOSTIC_CODES = {
  API_IO: 'The file cannot be read.',
  API_SYNTAX: 'The file is not valid TOML (also a key defined twice).',
  API_UNKNOWN_FIELD: 'A field the API definition does not know (a warning, with the closest known field).',
  API_TYPE: 'A value of the wrong type.',
  API_REQUIRED: 'A required field is missing.',
  API_ALLOWED: 'A value outside the allowed values of the field.',
  API_VALUE: 'A value of the right type that is still not valid (a context, path, URL, duration or code).',
  API_SCRIPT_PATH:
    'A [mediation] script whose real path (links resolved) is outside the configuration directory and [throughway.mediation] script_dirs: the API is refused.',
  API_CREDENTIALS_ORIGIN:
    "An endpoint's `security.origin` (the origin its credentials were stored for) is not the origin of its `url`: the API is refused, and the credentials are sent nowhere.",
  API_SELF_ENDPOINT:
    "An endpoint `url` that points at this node's own management port (9443 or 9763 plus server.offset, on a loopback address, localhost or server.hostname) without `allow_management_port = true`: the API is refused.",
  API_DEFINITION:
    'The OpenAPI document `definition` names cannot be read, is larger than 2 MiB, is not JSON or YAML, or is not OpenAPI 3.x: the API is refused.',
  API_DEFINITION_PATH:
    "The OpenAPI document `definition` names is outside the API file's directory (an absolute path, a .. segment, or a link leading out): the API is refused.",
  API_PLUGIN:
    'A `plugins` entry (of the API or a resource) names no plugin of [throughway] api_plugins, names one twice, or names one whose phases(settings) throws or places a phase before route: the API is refused (docs/plugins.md).',
  API_PROTO:
    "A .proto file of a gRPC API (`[grpc] proto`) cannot be read, leaves the API file's directory, is not valid protobuf (the message names the file and line), or declares no method: the API is refused (docs/grpc.md).",
  API_DUPLICATE_RESOURCE: 'Two resources of one API with the same path and method.',
  API_DUPLICATE_CONTEXT: 'Another deployed API already has this context and version: this one is refused.',
  API_TENANT_LIMIT:
    "A tenant's API file (apis/t/<domain>/) past its billing package's `resource_volume.limit` (the tenant's API count): refused, in deploy order (docs/tenants.md).",
  API_DEFAULT_VERSION_TAKEN:
    'Another deployed version of the context is already the default version: this one is deployed without default-version routing.',
  API_NOT_ENFORCED: 'A field that is accepted but not enforced yet (the message says which step enforces it).',
  API_LABELS: 'The API is not deployed on this gateway: none of its labels is in gateway_labels.',
  API_KEPT_PREVIOUS: 'A changed file is invalid: the previous valid version stays deployed.',
} as const;

export type ApiDiagnosticCode = keyof typeof API_DIAGNOSTIC_CODES;

export type ApiDiagnostic = DocumentDiagnostic<ApiDiagnosticCode>;

export function formatApiDiagnostic(d: ApiDiagnostic): string {
  return formatDocumentDiagnostic(d);
}

/** A `toml` parse error as an API_SYNTAX diagnostic (line and column where the package gives them). */
export function syntaxDiagnostic(err: unknown, file: string, _text: string): ApiDiagnostic {
  return documentSyntax(err, file, 'API_SYNTAX');
}
