/**
 * Throttling policies (spec 000 [apim.throttling]; spec 002 part 7, 900800–900807): the reference keeps its
 * tiers in the admin portal; throughway reads them from one TOML file, `[throughway.throttling]
 * policies_file` (docs/throttling.md describes the format). Four kinds, as in the reference:
 *
 *   [[subscription]]  subscription tiers: quota, stop_on_quota_reach, burst control (900804, 900807)
 *   [[application]]   application tiers (900803)
 *   [[api]]           advanced API/resource policies, with [[api.condition_group]] (900800 / 900802)
 *   [[custom]]        custom (global) policies keyed by a template over user, application, API, IP (900806)
 *
 * The file is validated once into frozen values; every problem is a diagnostic with file:line. A missing
 * file means the built-in defaults (DEFAULT_POLICIES_TOML, the same text as conf/policies.toml).
 */
import type { Segment, SourceMap } from '../config/locate';
import { closest } from '../config/diagnostics';
import {
  type DocumentCodes,
  type DocumentDiagnostic,
  DocumentReader,
  type DocumentWording,
  type FieldDef,
  isTable,
  parseDocument,
  readText,
  typedFields,
  type TypedFields,
} from '../config/document';
import { ipMatcher } from '../events/ip';
import type {
  PoliciesFileApi,
  PoliciesFileApplication,
  PoliciesFileCondition,
  PoliciesFileCustom,
  PoliciesFileNamed,
  PoliciesFileQuota,
  PoliciesFileSubscription,
} from './policies-file.generated';

export const TIME_UNITS = { sec: 1000, min: 60_000, hour: 3_600_000, day: 86_400_000 } as const;
export type TimeUnit = keyof typeof TIME_UNITS;
export const DATA_UNITS = { KB: 1024, MB: 1024 * 1024, GB: 1024 * 1024 * 1024 } as const;
export type DataUnit = keyof typeof DATA_UNITS;

/**
 * How a quota is counted across gateways (docs/throttling.md, "Counting modes"): `async` batches local
 * counts to the counter store; `exact` asks Redis once per call; `leased` spends blocks of quota taken
 * from Redis. undefined: the deployment's `[throughway.throttling] counting`.
 */
export const COUNTING_MODES = ['async', 'exact', 'leased'] as const;
export type CountingMode = (typeof COUNTING_MODES)[number];

/** A limit over a unit time. `limit` counts requests, or bytes for bandwidth; -1 for unlimited. */
export interface Quota {
  readonly kind: 'requests' | 'bandwidth' | 'unlimited';
  readonly limit: number;
  readonly windowMs: number;
  /** The policy's `counting` (undefined: the deployment default). */
  readonly counting?: CountingMode | undefined;
  /** The policy's `fail = "closed"`: refuse while the shared counters are unreachable (exact, leased). */
  readonly failClosed?: boolean;
}

export const UNLIMITED: Quota = Object.freeze({ kind: 'unlimited', limit: -1, windowMs: 0 });

/** Spike arrest of a subscription tier: at most `limit` requests per second or per minute (a request quota). */
export interface Burst extends Quota {
  readonly kind: 'requests';
}

export interface SubscriptionPolicy {
  readonly name: string;
  readonly description: string;
  readonly quota: Quota;
  /** false: the quota is counted but requests beyond it still pass (the reference's billing tiers). */
  readonly stopOnQuotaReach: boolean;
  readonly burst: Burst | undefined;
  /** GraphQL APIs: the deepest and the most complex query this tier allows, below the API's own limits (docs/graphql.md); undefined: the API's only. */
  readonly graphqlMaxDepth?: number;
  readonly graphqlMaxComplexity?: number;
}

export interface ApplicationPolicy {
  readonly name: string;
  readonly description: string;
  readonly quota: Quota;
}

export const CONDITION_TYPES = ['ip', 'ip_range', 'header', 'query', 'claim'] as const;
export type ConditionType = (typeof CONDITION_TYPES)[number];

export interface Condition {
  readonly type: ConditionType;
  /** Header, query parameter or claim name (header names compared case-insensitively). */
  readonly name: string;
  /** ip: the address; ip_range: "start-end" or CIDR; others: a regular expression matched against the whole value. */
  readonly value: string;
  /** Matches when the condition does not hold. */
  readonly invert: boolean;
  /** header, query, claim: the compiled value. */
  readonly pattern: RegExp | undefined;
}

export interface ConditionGroup {
  readonly description: string;
  /** All must hold for the group to apply (AND, as in the reference). */
  readonly conditions: readonly Condition[];
  readonly quota: Quota;
}

export interface ApiPolicy {
  readonly name: string;
  readonly description: string;
  /** Applies when no condition group does. */
  readonly quota: Quota;
  readonly groups: readonly ConditionGroup[];
}

export const TEMPLATE_VARS = [
  '$userId',
  '$appId',
  '$appName',
  '$subscriber',
  '$apiContext',
  '$apiVersion',
  '$apiName',
  '$clientIp',
  '$resource',
] as const;

export interface CustomPolicy {
  readonly name: string;
  readonly description: string;
  /** E.g. "$userId:$apiContext": one counter per distinct value of the template. */
  readonly keyTemplate: string;
  readonly quota: Quota;
}

export interface Policies {
  /** '' for the built-in defaults. */
  readonly file: string;
  readonly subscription: ReadonlyMap<string, SubscriptionPolicy>;
  readonly application: ReadonlyMap<string, ApplicationPolicy>;
  readonly api: ReadonlyMap<string, ApiPolicy>;
  readonly custom: readonly CustomPolicy[];
}

export type PolicyDiagnosticCode =
  | 'POLICY_IO'
  | 'POLICY_SYNTAX'
  | 'POLICY_UNKNOWN_FIELD'
  | 'POLICY_TYPE'
  | 'POLICY_REQUIRED'
  | 'POLICY_VALUE'
  | 'POLICY_DUPLICATE'
  | 'POLICY_UNLIMITED_DISABLED';

/** A policies file problem: the shared document reader's diagnostic (config/document.ts), with POLICY_* codes. */
export type PolicyDiagnostic = DocumentDiagnostic<PolicyDiagnosticCode>;

export function formatPolicyDiagnostic(d: PolicyDiagnostic): string {
  return `${d.line > 0 ? `${d.file}:${d.line}` : d.file}: ${d.level} ${d.code}${d.field === '' ? '' : ` ${d.field}`}: ${d.message}`;
}

export interface PolicyOptions {
  /** [apim.throttling] enable_unlimited_tier: false removes every unlimited policy. */
  readonly enableUnlimitedTier: boolean;
  /** [apim.throttling] enable_header_based_throttling and its siblings: condition types in force. */
  readonly headerConditions: boolean;
  readonly queryConditions: boolean;
  readonly claimConditions: boolean;
}

export const DEFAULT_POLICY_OPTIONS: PolicyOptions = Object.freeze({
  enableUnlimitedTier: true,
  headerConditions: false,
  queryConditions: false,
  claimConditions: false,
});

// ---------------------------------------------------------------------------------------------------------
// The fields of the file, in the configuration schema's format (config/document.ts FieldDef)
// ---------------------------------------------------------------------------------------------------------

/** The quota of every kind of policy and of a condition group. */
export const QUOTA_FIELDS: readonly FieldDef[] = [
  { key: 'request_count', type: 'integer', min: 1, meaning: 'Requests allowed per unit_time time_unit.' },
  { key: 'data_amount', type: 'integer', min: 1, meaning: 'Bandwidth allowed per unit_time time_unit, in data_unit.' },
  {
    key: 'data_unit',
    type: 'string',
    default: 'KB',
    allowed: Object.keys(DATA_UNITS),
    onlyWith: ['data_amount'],
    meaning: 'Unit of data_amount.',
  },
  {
    key: 'unit_time',
    type: 'integer',
    default: 1,
    min: 1,
    onlyWith: ['request_count', 'data_amount'],
    meaning: 'Length of the window, in time_unit.',
  },
  {
    key: 'time_unit',
    type: 'string',
    default: 'min',
    allowed: Object.keys(TIME_UNITS),
    onlyWith: ['request_count', 'data_amount'],
    meaning: 'Unit of unit_time.',
  },
  { key: 'unlimited', type: 'boolean', meaning: 'true: no limit. Exactly one of request_count, data_amount and unlimited is given.' },
];

/** What every kind of policy has: its name, its quota, how the quota is counted. */
export const NAMED_FIELDS: readonly FieldDef[] = [
  { key: 'name', type: 'string', required: true, nonEmpty: true, meaning: 'The policy name, unique within its kind.' },
  { key: 'description', type: 'string', default: '', meaning: 'Free text.' },
  ...QUOTA_FIELDS,
  {
    key: 'counting',
    type: 'string',
    allowed: COUNTING_MODES,
    meaning: 'async, exact or leased (docs/throttling.md, "Counting modes"); unset: [throughway.throttling] counting.',
  },
  {
    key: 'fail',
    type: 'string',
    default: 'open',
    allowed: ['open', 'closed'],
    meaning: "exact and leased: while Redis is unreachable, open admits this gateway's share of the limit, closed refuses.",
  },
];

const BURST_FIELDS: readonly FieldDef[] = [
  { key: 'limit', type: 'integer', required: true, min: 1, meaning: 'Requests allowed per time_unit (spike arrest, 900807).' },
  { key: 'time_unit', type: 'string', default: 'sec', allowed: ['sec', 'min'], meaning: 'sec or min.' },
];

const CONDITION_FIELDS: readonly FieldDef[] = [
  {
    key: 'type',
    type: 'string',
    required: true,
    allowed: CONDITION_TYPES,
    meaning: 'What the condition reads: the client IP, an IP range, a header, a query parameter or a token claim.',
  },
  { key: 'name', type: 'string', meaning: 'Header, query parameter or claim name (required for those types).' },
  {
    key: 'value',
    type: 'string',
    required: true,
    nonEmpty: true,
    meaning: 'ip: an address; ip_range: "start-end" or CIDR; otherwise a regular expression matched against the whole value.',
  },
  { key: 'invert', type: 'boolean', default: false, meaning: 'Matches when the condition does not hold.' },
];

const CONDITION_GROUP_FIELDS: readonly FieldDef[] = [
  { key: 'description', type: 'string', default: '', meaning: 'Free text.' },
  ...QUOTA_FIELDS,
  { key: 'condition', type: 'tables', meaning: 'The conditions, all of which must hold; at least one.', fields: CONDITION_FIELDS },
];

/** The four kinds of policy, each an array of tables (`[[subscription]]`, ...). */
export const POLICY_FIELDS: readonly FieldDef[] = [
  {
    key: 'subscription',
    type: 'tables',
    meaning: 'Subscription tiers (900804, 900807).',
    fields: [
      ...NAMED_FIELDS,
      {
        key: 'stop_on_quota_reach',
        type: 'boolean',
        default: true,
        meaning: 'false: the quota is counted but requests beyond it still pass.',
      },
      { key: 'burst', type: 'table', meaning: 'Spike arrest.', example: '{ limit = 10, time_unit = "sec" }', fields: BURST_FIELDS },
      {
        key: 'graphql_max_depth',
        type: 'number',
        min: 1,
        meaning:
          "GraphQL APIs: the deepest query a subscriber on this tier may send (103181 beyond it), on top of the API's own max_depth (docs/graphql.md).",
        example: '5',
      },
      {
        key: 'graphql_max_complexity',
        type: 'number',
        min: 1,
        meaning:
          "GraphQL APIs: the most fields a query of a subscriber on this tier may select (103182 beyond it), on top of the API's own max_complexity.",
        example: '200',
      },
    ],
  },
  { key: 'application', type: 'tables', meaning: 'Application tiers (900803).', fields: NAMED_FIELDS },
  {
    key: 'api',
    type: 'tables',
    meaning: 'Advanced API and resource policies (900800, 900802).',
    fields: [
      ...NAMED_FIELDS,
      { key: 'condition_group', type: 'tables', meaning: 'Condition groups with their own quota.', fields: CONDITION_GROUP_FIELDS },
    ],
  },
  {
    key: 'custom',
    type: 'tables',
    meaning: 'Custom (global) policies (900806).',
    fields: [
      ...NAMED_FIELDS,
      { key: 'key_template', type: 'string', required: true, nonEmpty: true, meaning: 'The counter key, over the template variables.' },
    ],
  },
];

const POLICY_CODES: DocumentCodes<PolicyDiagnosticCode> = {
  io: 'POLICY_IO',
  syntax: 'POLICY_SYNTAX',
  unknown: 'POLICY_UNKNOWN_FIELD',
  type: 'POLICY_TYPE',
  required: 'POLICY_REQUIRED',
  allowed: 'POLICY_VALUE',
  value: 'POLICY_VALUE',
};

const notOneOf = (
  value: unknown,
  allowed: readonly string[],
  near: string | undefined,
): { code: PolicyDiagnosticCode; message: string } => ({
  code: 'POLICY_VALUE',
  message: `${JSON.stringify(value)} is not one of ${allowed.join(', ')}${near !== undefined ? `; did you mean "${near}"?` : ''}`,
});

/** The policies file's messages (docs/throttling.md). */
const POLICY_WORDING: DocumentWording<PolicyDiagnosticCode> = {
  required: (key) => ({ message: `${key} is required`, atTable: true }),
  wrongValue: (def, raw) => {
    if (def.allowed !== undefined) return notOneOf(raw, def.allowed, typeof raw === 'string' ? closest(raw, def.allowed) : undefined);
    switch (def.type) {
      case 'integer':
        return { code: 'POLICY_VALUE', message: `expected a whole number >= ${def.min ?? 1}, got ${JSON.stringify(raw)}` };
      case 'string':
        return { code: 'POLICY_TYPE', message: 'expected a non-empty string' };
      case 'boolean':
        return { code: 'POLICY_TYPE', message: 'expected true or false' };
      case 'table':
        return { code: 'POLICY_TYPE', message: `expected a table${def.example !== undefined ? `: ${def.example}` : ''}` };
      default:
        return {
          code: 'POLICY_TYPE',
          message:
            def.key === 'condition_group'
              ? 'expected [[api.condition_group]] tables'
              : `expected an array of tables, written [[${def.key}]]`,
        };
    }
  },
  notAllowed: notOneOf,
};

type Reader = DocumentReader<PolicyDiagnosticCode>;

/** How a policy's quotas are counted (NAMED_FIELDS' counting and fail); a condition group has neither. */
type ModeFields = Partial<Pick<PoliciesFileNamed, 'counting' | 'fail'>>;

/**
 * request_count | data_amount + data_unit | unlimited, over unit_time time_unit. `raw` is the entry as
 * written (exactly one of the three), `t` its checked fields (undefined when a field failed).
 */
function quota(
  r: Reader,
  raw: Record<string, unknown>,
  t: (PoliciesFileQuota & ModeFields) | undefined,
  seg: Segment[],
  policy?: ModeFields,
): Quota | undefined {
  const given = ['request_count', 'data_amount', 'unlimited'].filter((k) => raw[k] !== undefined);
  if (given.length !== 1) {
    r.report(
      'error',
      given.length === 0 ? 'POLICY_REQUIRED' : 'POLICY_VALUE',
      given.length === 0 ? seg : [...seg, given[1] as string],
      'a policy has exactly one of request_count, data_amount (with data_unit) and unlimited = true',
    );
    return undefined;
  }
  if (raw.unlimited !== undefined) {
    if (raw.unlimited === false) {
      r.report('error', 'POLICY_VALUE', [...seg, 'unlimited'], 'unlimited can only be true; give request_count or data_amount instead');
      return undefined;
    }
    return t === undefined ? undefined : UNLIMITED;
  }
  // Checked, unit_time and time_unit are there (read, with their defaults, beside the request_count or the
  // data_amount given), and data_unit beside data_amount.
  if (t === undefined || t.unit_time === undefined || t.time_unit === undefined) return undefined;
  const windowMs = t.unit_time * TIME_UNITS[t.time_unit];
  const mode = { counting: t.counting ?? policy?.counting, failClosed: (t.fail ?? policy?.fail) === 'closed' };
  if (t.request_count !== undefined) return Object.freeze({ kind: 'requests', limit: t.request_count, windowMs, ...mode });
  if (t.data_amount === undefined || t.data_unit === undefined) return undefined;
  return Object.freeze({ kind: 'bandwidth', limit: t.data_amount * DATA_UNITS[t.data_unit], windowMs, ...mode });
}

function compileRegex(r: Reader, value: string, seg: Segment[]): RegExp | undefined {
  try {
    return new RegExp(`^(?:${value})$`);
  } catch (err) {
    r.report('error', 'POLICY_VALUE', seg, `not a regular expression: ${(err as Error).message}`);
    return undefined;
  }
}

/** A condition's own checks; they run even when a sibling condition's fields failed (t undefined). */
function condition(r: Reader, raw: Record<string, unknown>, t: PoliciesFileCondition | undefined, seg: Segment[]): Condition | undefined {
  const type = CONDITION_TYPES.find((c) => c === raw.type);
  const value = typeof raw.value === 'string' && raw.value !== '' ? raw.value : undefined;
  if (type === undefined || value === undefined) return undefined;
  let name = '';
  let pattern: RegExp | undefined;
  if (type === 'ip' || type === 'ip_range') {
    if (ipMatcher(type, value) === undefined) {
      r.report(
        'error',
        'POLICY_VALUE',
        [...seg, 'value'],
        type === 'ip'
          ? `${JSON.stringify(value)} is not an IP address`
          : `${JSON.stringify(value)} is not a range ("10.0.0.1-10.0.0.9" or CIDR "10.0.0.0/8")`,
      );
      return undefined;
    }
  } else {
    if (raw.name === undefined) r.report('error', 'POLICY_REQUIRED', seg, 'name is required');
    else if (raw.name === '') r.report('error', 'POLICY_TYPE', [...seg, 'name'], 'expected a non-empty string');
    name = typeof raw.name === 'string' ? raw.name : '';
    if (name === '') return undefined;
    if (type === 'header') name = name.toLowerCase();
    pattern = compileRegex(r, value, [...seg, 'value']);
    if (pattern === undefined) return undefined;
  }
  return t === undefined ? undefined : Object.freeze({ type, name, value, invert: t.invert === true, pattern });
}

// IP matching (shared with the blocking conditions): lib/events/ip.ts.
export { ipMatcher, ipNumber, plainIp } from '../events/ip';

// ---------------------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------------------

function fieldsOf(kind: string): readonly FieldDef[] {
  return POLICY_FIELDS.find((f) => f.key === kind)?.fields ?? [];
}

/** Each kind's fields with the shape the reader checks an entry into (lib/throttle/policies-file.generated.ts). */
const SUBSCRIPTION = typedFields<PoliciesFileSubscription>(fieldsOf('subscription'));
const APPLICATION = typedFields<PoliciesFileApplication>(fieldsOf('application'));
const API = typedFields<PoliciesFileApi>(fieldsOf('api'));
const CUSTOM = typedFields<PoliciesFileCustom>(fieldsOf('custom'));

/** Each entry of one kind in file order: its fields checked (t undefined when a field failed), then `fn`. */
function entries<E, T>(
  r: Reader,
  doc: Record<string, unknown>,
  kind: string,
  table: TypedFields<E>,
  fn: (e: { raw: Record<string, unknown>; t: E | undefined; seg: Segment[] }) => T,
): T[] {
  const v = doc[kind];
  if (v === undefined) return [];
  if (!Array.isArray(v) || !v.every(isTable)) {
    r.report('error', 'POLICY_TYPE', [kind], `expected an array of tables, written [[${kind}]]`);
    return [];
  }
  return v.map((raw, i) => {
    const seg: Segment[] = [kind, i];
    return fn({ raw, t: r.read(table, raw, seg), seg });
  });
}

function named<T extends { readonly name: string; readonly quota: Quota }>(
  r: Reader,
  kind: string,
  list: { value: T | undefined; seg: Segment[] }[],
  options: PolicyOptions,
): Map<string, T> {
  const out = new Map<string, T>();
  for (const { value, seg } of list) {
    if (value === undefined) continue;
    if (out.has(value.name)) {
      r.report('error', 'POLICY_DUPLICATE', [...seg, 'name'], `${kind} policy ${JSON.stringify(value.name)} is defined twice`);
      continue;
    }
    if (value.quota.kind === 'unlimited' && !options.enableUnlimitedTier) {
      r.report(
        'info',
        'POLICY_UNLIMITED_DISABLED',
        [...seg, 'name'],
        `${kind} policy ${JSON.stringify(value.name)} is unlimited and [apim.throttling] enable_unlimited_tier is false: it is removed`,
      );
      continue;
    }
    out.set(value.name, value);
  }
  return out;
}

export interface PoliciesResult {
  readonly policies: Policies | undefined;
  readonly diagnostics: readonly PolicyDiagnostic[];
}

/** Validates a parsed policies document. */
export function validatePolicies(
  doc: unknown,
  file: string,
  options: PolicyOptions = DEFAULT_POLICY_OPTIONS,
  map?: SourceMap,
): PoliciesResult {
  const r: Reader = new DocumentReader(file === '' ? '<built-in policies>' : file, map, POLICY_CODES, {
    columns: false,
    wording: POLICY_WORDING,
  });
  if (!isTable(doc)) {
    r.report('error', 'POLICY_TYPE', [], 'the policies file is a table');
    return { policies: undefined, diagnostics: r.diagnostics };
  }
  r.unknownKeys(
    POLICY_FIELDS.map((f) => f.key),
    doc,
    [],
    { noun: 'table', suggest: (near) => `[[${near}]]` },
  );
  const base = (
    raw: Record<string, unknown>,
    t: PoliciesFileNamed | undefined,
    seg: Segment[],
  ): { name: string; description: string; quota: Quota } | undefined => {
    const q = quota(r, raw, t, seg);
    return t === undefined || q === undefined ? undefined : { name: t.name, description: t.description, quota: q };
  };

  const subs = entries(r, doc, 'subscription', SUBSCRIPTION, ({ raw, t, seg }) => {
    const b = base(raw, t, seg);
    const rawBurst = t?.burst;
    // The burst control is counted as its tier is (its `counting` and `fail`).
    const burst: Burst | undefined =
      rawBurst === undefined
        ? undefined
        : Object.freeze({
            kind: 'requests',
            limit: rawBurst.limit,
            windowMs: TIME_UNITS[rawBurst.time_unit],
            counting: t?.counting,
            failClosed: t?.fail === 'closed',
          });
    const gql =
      t === undefined
        ? {}
        : {
            ...(t.graphql_max_depth !== undefined ? { graphqlMaxDepth: t.graphql_max_depth } : {}),
            ...(t.graphql_max_complexity !== undefined ? { graphqlMaxComplexity: t.graphql_max_complexity } : {}),
          };
    const value =
      b === undefined || t === undefined ? undefined : Object.freeze({ ...b, stopOnQuotaReach: t.stop_on_quota_reach, burst, ...gql });
    return { value, seg };
  });
  const apps = entries(r, doc, 'application', APPLICATION, ({ raw, t, seg }) => {
    const b = base(raw, t, seg);
    const value: ApplicationPolicy | undefined = b === undefined ? undefined : Object.freeze(b);
    return { value, seg };
  });
  const apis = entries(r, doc, 'api', API, ({ raw, t, seg }) => {
    const b = base(raw, t, seg);
    const groups: ConditionGroup[] = [];
    let ok = true;
    const rawGroups = raw.condition_group;
    if (Array.isArray(rawGroups) && rawGroups.every(isTable)) {
      const checkedGroups = t?.condition_group;
      rawGroups.forEach((g, gi) => {
        const gs: Segment[] = [...seg, 'condition_group', gi];
        const gt = checkedGroups?.[gi];
        // A condition group is counted as its policy is (its `counting` and `fail`).
        const q = quota(r, g, gt, gs, t);
        const rawConds = g.condition;
        if (rawConds === undefined || (Array.isArray(rawConds) && rawConds.length === 0)) {
          r.report('error', 'POLICY_REQUIRED', gs, 'a condition group needs at least one [[api.condition_group.condition]]');
          ok = false;
          return;
        }
        if (!Array.isArray(rawConds) || !rawConds.every(isTable)) {
          ok = false;
          return;
        }
        const checkedConds = gt?.condition;
        const conds = rawConds.map((c, ci) => condition(r, c, checkedConds?.[ci], [...gs, 'condition', ci]));
        const held = conds.filter((c): c is Condition => c !== undefined);
        if (q === undefined || gt === undefined || held.length < conds.length) {
          ok = false;
          return;
        }
        groups.push(Object.freeze({ description: gt.description, conditions: Object.freeze(held), quota: q }));
      });
    }
    const value: ApiPolicy | undefined = b === undefined || !ok ? undefined : Object.freeze({ ...b, groups: Object.freeze(groups) });
    return { value, seg };
  });
  const customs = entries(r, doc, 'custom', CUSTOM, ({ raw, t, seg }) => {
    const b = base(raw, t, seg);
    const keyTemplate = raw.key_template;
    if (typeof keyTemplate === 'string' && keyTemplate !== '') {
      const vars = keyTemplate.match(/\$[A-Za-z]+/g) ?? [];
      const bad = vars.find((v) => !TEMPLATE_VARS.some((known) => known === v));
      if (bad !== undefined) {
        r.report(
          'error',
          'POLICY_VALUE',
          [...seg, 'key_template'],
          `${bad} is not a template variable (one of ${TEMPLATE_VARS.join(', ')})`,
        );
        return { value: undefined, seg };
      }
      if (vars.length === 0)
        r.report('warning', 'POLICY_VALUE', [...seg, 'key_template'], 'holds no template variable: one counter for every request');
    }
    const value: CustomPolicy | undefined =
      b === undefined || t === undefined ? undefined : Object.freeze({ ...b, keyTemplate: t.key_template });
    return { value, seg };
  });

  const subscription = named(r, 'subscription', subs, options);
  const application = named(r, 'application', apps, options);
  const api = named(r, 'api', apis, options);
  const custom = [...named(r, 'custom', customs, options).values()];
  if (r.errors > 0) return { policies: undefined, diagnostics: r.diagnostics };
  return { policies: Object.freeze({ file, subscription, application, api, custom: Object.freeze(custom) }), diagnostics: r.diagnostics };
}

/** Parses and validates a policies file's text. */
export function parsePolicies(text: string, file: string, options: PolicyOptions = DEFAULT_POLICY_OPTIONS): PoliciesResult {
  const parsed = parseDocument(text, file, POLICY_CODES, false);
  if (!parsed.ok) return { policies: undefined, diagnostics: [parsed.diagnostic] };
  return validatePolicies(parsed.doc, file, options, parsed.map);
}

/** Reads the policies file; a missing file gives the built-in defaults. */
export function loadPolicies(file: string, options: PolicyOptions = DEFAULT_POLICY_OPTIONS): PoliciesResult {
  const read = readText(file);
  if (!read.ok) {
    if (read.missing) return parsePolicies(DEFAULT_POLICIES_TOML, '', options);
    return {
      policies: undefined,
      diagnostics: [{ level: 'error', code: 'POLICY_IO', file, line: 0, field: '', message: `cannot read (${read.message})` }],
    };
  }
  return parsePolicies(read.text, file, options);
}

/** The reference's default tiers; conf/policies.toml holds the same (a test keeps them equal). */
export const DEFAULT_POLICIES_TOML = `
[[subscription]]
name = "Gold"
description = "Allows 5000 requests per minute"
request_count = 5000
[[subscription]]
name = "Silver"
description = "Allows 2000 requests per minute"
request_count = 2000
[[subscription]]
name = "Bronze"
description = "Allows 1000 requests per minute"
request_count = 1000
[[subscription]]
name = "Unlimited"
description = "Allows unlimited requests"
unlimited = true
[[subscription]]
name = "Unauthenticated"
description = "Allows 500 requests per minute, per client IP address, on resources without authentication"
request_count = 500
[[application]]
name = "10PerMin"
description = "Allows 10 requests per minute"
request_count = 10
[[application]]
name = "20PerMin"
description = "Allows 20 requests per minute"
request_count = 20
[[application]]
name = "50PerMin"
description = "Allows 50 requests per minute"
request_count = 50
[[application]]
name = "Unlimited"
description = "Allows unlimited requests"
unlimited = true
[[api]]
name = "10KPerMin"
description = "Allows 10000 requests per minute"
request_count = 10000
[[api]]
name = "20KPerMin"
description = "Allows 20000 requests per minute"
request_count = 20000
[[api]]
name = "50KPerMin"
description = "Allows 50000 requests per minute"
request_count = 50000
[[api]]
name = "Unlimited"
description = "Allows unlimited requests"
unlimited = true
`;

/** The names an API definition may refer to (checked when it is validated). */
export interface PolicyNames {
  /** [[api]] names: `policy` of an API or resource. */
  readonly api: ReadonlySet<string>;
  /** [[subscription]] names: `unauthenticated_policy`. */
  readonly subscription: ReadonlySet<string>;
}

export function policyNames(p: Policies): PolicyNames {
  return { api: new Set(p.api.keys()), subscription: new Set(p.subscription.keys()) };
}
