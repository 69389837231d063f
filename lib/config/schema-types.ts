/**
 * The shape of the declarative configuration schema.
 *
 * Every section and key of spec documents 000 and 001 (part 2) is one entry of type SectionDef / KeyDef.
 * The loader, the validator, `config print`, the generated docs (docs/configuration.md) and the generated
 * TypeScript interfaces all read these entries; nothing else describes the configuration.
 */

/** The spec's type letters (document 000, part 2 legend), plus 'map' for free key/value tables. */
export type KeyType =
  | 's' // string
  | 'b' // boolean
  | 'i' // integer
  | 'f' // float
  | 'a' // array of strings
  | 'map'; // a table of arbitrary keys (e.g. registry_handler.properties)

/**
 * Extra meaning attached to a key's value, used by validation and conversion.
 * - url: must parse as a URL unless it contains a runtime `${...}` token
 * - port: integer 0..65535 (0 = pick any free port, used by tests)
 * - duration: a number in `unit`, or a string such as "900s", "15 m", "2m", "1000ms"; stored as milliseconds
 * - list: a comma-separated list; a TOML array is accepted too; stored as string[]
 * - bytes: a number of bytes
 * - class: a class name of the reference implementation (accepted, mapped or ignored)
 * - path: a file system path, relative paths are resolved from the config file's directory
 * - cidr: IP addresses and CIDR ranges (convert.ts parseSubnet), each entry checked
 */
/**
 * 'store': a key or trust store file; a bare name resolves in the security directory, as spec 001 places
 * store files ("placed in the security directory"), and the rules of config/stores.ts `storeCandidates`.
 */
export type KeyFormat = 'url' | 'port' | 'duration' | 'list' | 'bytes' | 'class' | 'path' | 'store' | 'host' | 'email' | 'regex' | 'cidr';

export interface KeyDef {
  /** Dotted path relative to the section, e.g. 'pool_options.maxActive', 'listener.parameters.port'. */
  readonly key: string;
  readonly type: KeyType;
  /** The spec's R flag. Enforced only when the section runs, its feature is on, and there is no default. */
  readonly required?: boolean;
  /**
   * The typed default where the spec shows one. May be a string holding `$ref{section.key}` (the spec's
   * `$conf{...}` defaults such as "super admin user name"), resolved after defaults are filled.
   * Absent when the spec's default column is '-' or 'not defined'.
   */
  readonly default?: string | number | boolean | readonly string[];
  /** The spec's wording of the default when it is not a literal (shown in the docs). */
  readonly defaultText?: string;
  /** Allowed values (compared case-sensitively unless `caseInsensitive`). */
  readonly allowed?: readonly string[];
  readonly caseInsensitive?: boolean;
  readonly format?: KeyFormat;
  /** For format 'duration': the unit of a bare number. */
  readonly unit?: 'ms' | 's' | 'm' | 'h';
  /**
   * A string-typed key whose spec default is written TRUE/FALSE: 'TRUE'/'FALSE' (any case) and TOML
   * booleans both become a boolean (document 000, part 2 legend).
   */
  readonly boolString?: boolean;
  /** Never printed: `config print` and every error message show `****`. */
  readonly secret?: boolean;
  /**
   * Accepted and validated, but throughway does not act on it: one line saying why (a Java class with no
   * counterpart, the reference's registry, a hosted service...). `config check` shows it beside each such
   * key a file writes; docs/migrating.md's key table lists it (lib/config/key-status.ts `inactiveReason`).
   */
  readonly inactive?: string;
  /**
   * The key acts, but not as the spec describes: one line saying how and why (docs/migrating.md's key
   * table shows it; lib/config/key-status.ts derives each key's status).
   */
  readonly differs?: string;
  /** Inclusive numeric range. */
  readonly min?: number;
  readonly max?: number;
  /** The key's meaning, from the spec (or throughway's own docs for the [throughway] section). */
  readonly meaning: string;
}

interface SectionBase {
  /**
   * The table path as written in deployment.toml, without brackets: 'transport.passthru_http',
   * 'apim.gateway.environment'. Placeholders use angle brackets: 'custom_keystore.<name>',
   * 'multi_tenancy.billing.package.<package_key>'. '' is the top level (for `enabled_global_handlers`).
   */
  readonly path: string;
  /** `[[path]]`: one entry per occurrence. */
  readonly repeatable?: boolean;
  /** The spec's R on the section (informative: sections with defaults are always satisfied). */
  readonly required?: boolean;
  /**
   * Which spec document lists it: '000', '001', 'reference' for tables the reference's own files write
   * that the spec does not list (schema/reference.ts), or 'throughway' for the project's own settings.
   */
  readonly source: '000' | '001' | 'reference' | 'throughway';
  readonly title: string;
  /** Dotted full key path of the switch that turns the feature on, e.g. 'apim.analytics.enable'. */
  readonly enabledBy?: string;
  /** Keys not listed are accepted without a warning (free tables such as `.properties`). */
  readonly openKeys?: boolean;
  readonly keys: readonly KeyDef[];
}

/**
 * Whether throughway runs the section's feature. A section that does not run is accepted and validated:
 * its required keys never fail a load, `config check` lists it as inactive, and `notRun` says why in one
 * line (shown for each of its keys, as KeyDef.inactive is).
 */
export type SectionDef = SectionBase & ({ readonly runs: true } | { readonly runs: false; readonly notRun: string });
