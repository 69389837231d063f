/**
 * The codes of `throughway import` and `throughway export` (docs/migrating.md, "Importing the reference's
 * projects"): one table, each code with its meaning; every failure is an ImportError naming the code and
 * the path (a file, a zip entry, or a field of a project file) it is about. Nothing is written when one
 * is raised: a project is read and checked whole before the first file is written.
 */
import { ThroughwayError } from '../errors';
export const IMPORT_CODES = {
  IMPORT_IO: 'A file or directory cannot be read or written.',
  IMPORT_LIMIT:
    'The project is larger than the import reads: more entries, more bytes, or a deeper directory than the bounds of docs/migrating.md.',
  IMPORT_ZIP_FORMAT:
    'The .zip file is not a zip archive throughway reads: no end of central directory, ZIP64, encrypted entries, a compression method other than stored or deflate, or an entry whose bytes do not match its header.',
  IMPORT_ZIP_PATH:
    'A zip entry or a project file whose name leaves the project: an absolute path, a drive letter, a backslash or a `..` segment.',
  IMPORT_ZIP_RATIO: 'A zip entry that expands more than the allowed ratio over its compressed size (a zip bomb).',
  IMPORT_NOT_PROJECT: 'The directory or zip holds no api.yaml or api.json (an API project), no application file, or no policy file.',
  IMPORT_YAML: 'A project file is not valid YAML or JSON (the message gives the line).',
  IMPORT_FIELD: 'A field of a project file is missing or has a value the import cannot use (the path names the field).',
  IMPORT_UNSUPPORTED_TYPE:
    'The API type is one throughway does not serve (WEBSUB, SSE, WEBHOOK, ASYNC, SOAPTOREST and other streaming or AsyncAPI types): refused by name.',
  IMPORT_DEFINITION: 'The definition the project names is missing (Definitions/swagger.yaml, swagger.json or schema.graphql).',
  IMPORT_INVALID_API: "The API file the import would write does not validate (the gateway's own API_* diagnostics follow).",
  IMPORT_EXISTS: 'A file the import would write exists with other content: not overwritten without --force.',
  IMPORT_STORE: "The key manager's store refused an application, key or subscription.",
  IMPORT_NOT_FOUND: 'export api: no API file in apis/ has that name and version.',
} as const;

export type ImportErrorCode = keyof typeof IMPORT_CODES;

/** One failure of an import or export: a stable code, the path it is about, and what is wrong. */
export class ImportError extends ThroughwayError {
  readonly code: ImportErrorCode;
  readonly path: string;
  constructor(code: ImportErrorCode, where: string, message: string) {
    super(`${where}: ${code}: ${message}`);
    this.name = 'ImportError';
    this.code = code;
    this.path = where;
  }
}
