/**
 * Packages loaded on first use, not at `require('throughway')` (docs/performance.md, "Import and start-up"):
 * the database drivers, ioredis, node-forge, fast-xml-parser, piscina, graphql (GraphQL APIs), ldapts
 * (LDAP user stores), yaml (OpenAPI documents in YAML), protobufjs (the .proto files of gRPC APIs) and prom-client with its peer @opentelemetry/api
 * (metrics; lib/index.ts exports them on first read) and jose (tokens: lib/security/jose.ts). Their types come from `import type` (erased at compile time); their code from
 * `load(name, key)`, a `require` made when a feature that needs it starts.
 *
 * pg, mysql2, ioredis, libsql (the embedded store's engine where Node has no node:sqlite), ldapts (LDAP user stores, lib/store/ldap.ts) xml-crypto with @xmldom/xmldom (SAML 2.0 bearer assertions, lib/keymanager/saml-bearer.ts) and Spectral's core, ref resolver and rulesets (the publisher's security audit, lib/audit) are optionalDependencies (package.json): an install with
 * `--omit=optional` lacks them. Asking for a missing one throws PackageMissingError (`PACKAGE_MISSING`,
 * docs/operations.md, "Start-up errors"), naming the package to install and the configuration key that
 * asked for it.
 */
import { ThroughwayError } from '../errors';

/** The packages loaded on demand, and the install command that brings each one. */
export const LAZY_PACKAGES = [
  'libsql',
  'pg',
  'mysql2',
  'ioredis',
  'node-forge',
  'fast-xml-parser',
  'piscina',
  'graphql',
  'ldapts',
  'yaml',
  'prom-client',
  '@opentelemetry/api',
  'jose',
  'protobufjs',
  'xml-crypto',
  '@xmldom/xmldom',
  '@stoplight/spectral-core',
  '@stoplight/spectral-ref-resolver',
  '@stoplight/spectral-rulesets',
  '@stoplight/spectral-owasp-ruleset',
] as const;

export class PackageMissingError extends ThroughwayError {
  readonly code = 'PACKAGE_MISSING';
  constructor(
    readonly packageName: string,
    readonly key: string,
    options?: { cause?: unknown },
  ) {
    super(
      `${key} needs the package ${packageName}, which is not installed: run \`npm install ${packageName}\` (it is an optional dependency of throughway)`,
      options,
    );
    this.name = 'PackageMissingError';
  }
}

/** Whether err is Node's "cannot find module" for `name` itself (not for a file inside it or a dependency of it). */
function isMissing(err: unknown, name: string): boolean {
  const e = err as { code?: unknown; message?: unknown };
  if (e.code !== 'MODULE_NOT_FOUND') return false;
  const first = String(e.message).split('\n')[0] ?? '';
  return first.includes(`'${name}'`);
}

/**
 * `require(name)` on demand. `key` is the configuration key (or API) that asked for it, as the user wrote
 * it, e.g. `[database.apim_db] type = "postgre"`; it is in the error when the package is missing. Node
 * caches the module: later calls cost a map look-up.
 */
export function load<T>(name: string, key: string): T {
  try {
    return require(name) as T;
  } catch (err) {
    // The package to install is the name's first segment (`mysql2/promise` is in `mysql2`).
    if (isMissing(err, name))
      throw new PackageMissingError(name.startsWith('@') ? name.split('/').slice(0, 2).join('/') : (name.split('/')[0] as string), key, {
        cause: err,
      });
    throw err;
  }
}
