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
import * as fs from 'node:fs';
import * as toml from 'toml';
import { locateKeys, nearest, pathKey, type Segment, type SourceMap } from '../config/locate';
import { closest } from '../config/diagnostics';
import { ipMatcher } from '../events/ip';

export const TIME_UNITS = { sec: 1000, min: 60_000, hour: 3_600_000, day: 86_400_000 } as const;
export type TimeUnit = keyof typeof TIME_UNITS;
export const DATA_UNITS = { KB: 1024, MB: 1024 * 1024, GB: 1024 * 1024 * 1024 } as const;
export type DataUnit = keyof typeof DATA_UNITS;

/** A limit over a unit time. `limit` counts requests, or bytes for bandwidth; -1 for unlimited. */
export interface Quota {
  readonly kind: 'requests' | 'bandwidth' | 'unlimited';
  readonly limit: number;
  readonly windowMs: number;
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

export const TEMPLATE_VARS = ['$userId', '$appId', '$appName', '$subscriber', '$apiContext', '$apiVersion', '$apiName', '$clientIp', '$resource'] as const;

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

export type PolicyDiagnosticCode = 'POLICY_IO' | 'POLICY_SYNTAX' | 'POLICY_UNKNOWN_FIELD' | 'POLICY_TYPE' | 'POLICY_REQUIRED' | 'POLICY_VALUE' | 'POLICY_DUPLICATE' | 'POLICY_UNLIMITED_DISABLED';

export interface PolicyDiagnostic {
  readonly level: 'error' | 'warning' | 'info';
  readonly code: PolicyDiagnosticCode;
  readonly file: string;
  readonly line: number;
  readonly field: string;
  readonly message: string;
}

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

export const DEFAULT_POLICY_OPTIONS: PolicyOptions = Object.freeze({ enableUnlimitedTier: true, headerConditions: false, queryConditions: false, claimConditions: false });

// ---------------------------------------------------------------------------------------------------------

interface Ctx {
  readonly file: string;
  readonly map: SourceMap | undefined;
  readonly diagnostics: PolicyDiagnostic[];
  errors: number;
}

function report(ctx: Ctx, level: PolicyDiagnostic['level'], code: PolicyDiagnosticCode, seg: readonly Segment[], message: string): void {
  const at = ctx.map !== undefined ? nearest(ctx.map, seg) : undefined;
  ctx.diagnostics.push({ level, code, file: ctx.file, line: at?.line ?? 0, field: pathKey(seg), message });
  if (level === 'error') ctx.errors++;
}

const isTable = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date);

const QUOTA_FIELDS = ['request_count', 'data_amount', 'data_unit', 'unit_time', 'time_unit', 'unlimited'];
const FIELDS: Record<string, readonly string[]> = {
  subscription: ['name', 'description', ...QUOTA_FIELDS, 'stop_on_quota_reach', 'burst'],
  application: ['name', 'description', ...QUOTA_FIELDS],
  api: ['name', 'description', ...QUOTA_FIELDS, 'condition_group'],
  custom: ['name', 'description', ...QUOTA_FIELDS, 'key_template'],
  condition_group: ['description', ...QUOTA_FIELDS, 'condition'],
  condition: ['type', 'name', 'value', 'invert'],
  burst: ['limit', 'time_unit'],
};

function unknownFields(ctx: Ctx, kind: string, raw: Record<string, unknown>, seg: Segment[]): void {
  const known = FIELDS[kind] as readonly string[];
  for (const k of Object.keys(raw)) {
    if (known.includes(k)) continue;
    const near = closest(k, known);
    report(ctx, 'warning', 'POLICY_UNKNOWN_FIELD', [...seg, k], `unknown field${near !== undefined ? `; did you mean "${near}"?` : ''}`);
  }
}

function str(ctx: Ctx, raw: Record<string, unknown>, key: string, seg: Segment[], required: boolean): string | undefined {
  const v = raw[key];
  if (v === undefined) {
    if (required) report(ctx, 'error', 'POLICY_REQUIRED', seg, `${key} is required`);
    return undefined;
  }
  if (typeof v !== 'string' || (required && v === '')) {
    report(ctx, 'error', 'POLICY_TYPE', [...seg, key], 'expected a non-empty string');
    return undefined;
  }
  return v;
}

function posInt(ctx: Ctx, v: unknown, seg: Segment[]): number | undefined {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) {
    report(ctx, 'error', 'POLICY_VALUE', seg, `expected a whole number >= 1, got ${JSON.stringify(v)}`);
    return undefined;
  }
  return v;
}

function unit<T extends string>(ctx: Ctx, v: unknown, allowed: readonly T[], seg: Segment[]): T | undefined {
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) {
    const near = typeof v === 'string' ? closest(v, allowed) : undefined;
    report(ctx, 'error', 'POLICY_VALUE', seg, `${JSON.stringify(v)} is not one of ${allowed.join(', ')}${near !== undefined ? `; did you mean "${near}"?` : ''}`);
    return undefined;
  }
  return v as T;
}

/** request_count | data_amount + data_unit | unlimited, over unit_time time_unit. */
function quota(ctx: Ctx, raw: Record<string, unknown>, seg: Segment[]): Quota | undefined {
  const given = ['request_count', 'data_amount', 'unlimited'].filter((k) => raw[k] !== undefined);
  if (given.length !== 1) {
    report(ctx, 'error', given.length === 0 ? 'POLICY_REQUIRED' : 'POLICY_VALUE', given.length === 0 ? seg : [...seg, given[1] as string], 'a policy has exactly one of request_count, data_amount (with data_unit) and unlimited = true');
    return undefined;
  }
  if (raw.unlimited !== undefined) {
    if (raw.unlimited !== true) {
      report(ctx, 'error', 'POLICY_VALUE', [...seg, 'unlimited'], 'unlimited can only be true; give request_count or data_amount instead');
      return undefined;
    }
    return UNLIMITED;
  }
  const unitTime = raw.unit_time === undefined ? 1 : posInt(ctx, raw.unit_time, [...seg, 'unit_time']);
  const timeUnit = raw.time_unit === undefined ? 'min' : unit(ctx, raw.time_unit, Object.keys(TIME_UNITS) as TimeUnit[], [...seg, 'time_unit']);
  if (unitTime === undefined || timeUnit === undefined) return undefined;
  const windowMs = unitTime * TIME_UNITS[timeUnit];
  if (raw.request_count !== undefined) {
    const n = posInt(ctx, raw.request_count, [...seg, 'request_count']);
    return n === undefined ? undefined : Object.freeze({ kind: 'requests', limit: n, windowMs });
  }
  const amount = posInt(ctx, raw.data_amount, [...seg, 'data_amount']);
  const dataUnit = unit(ctx, raw.data_unit ?? 'KB', Object.keys(DATA_UNITS) as DataUnit[], [...seg, 'data_unit']);
  if (amount === undefined || dataUnit === undefined) return undefined;
  return Object.freeze({ kind: 'bandwidth', limit: amount * DATA_UNITS[dataUnit], windowMs });
}

function compileRegex(ctx: Ctx, value: string, seg: Segment[]): RegExp | undefined {
  try {
    return new RegExp(`^(?:${value})$`);
  } catch (err) {
    report(ctx, 'error', 'POLICY_VALUE', seg, `not a regular expression: ${(err as Error).message}`);
    return undefined;
  }
}

function condition(ctx: Ctx, raw: unknown, seg: Segment[]): Condition | undefined {
  if (!isTable(raw)) {
    report(ctx, 'error', 'POLICY_TYPE', seg, 'a condition is a table: type, name, value, invert');
    return undefined;
  }
  unknownFields(ctx, 'condition', raw, seg);
  const type = unit(ctx, raw.type, CONDITION_TYPES, [...seg, 'type']);
  const value = str(ctx, raw, 'value', seg, true);
  const invert = raw.invert ?? false;
  if (typeof invert !== 'boolean') report(ctx, 'error', 'POLICY_TYPE', [...seg, 'invert'], 'expected true or false');
  if (type === undefined || value === undefined) return undefined;
  let name = '';
  let pattern: RegExp | undefined;
  if (type === 'ip' || type === 'ip_range') {
    if (ipMatcher(type, value) === undefined) {
      report(ctx, 'error', 'POLICY_VALUE', [...seg, 'value'], type === 'ip' ? `${JSON.stringify(value)} is not an IP address` : `${JSON.stringify(value)} is not a range ("10.0.0.1-10.0.0.9" or CIDR "10.0.0.0/8")`);
      return undefined;
    }
  } else {
    name = str(ctx, raw, 'name', seg, true) ?? '';
    if (name === '') return undefined;
    if (type === 'header') name = name.toLowerCase();
    pattern = compileRegex(ctx, value, [...seg, 'value']);
    if (pattern === undefined) return undefined;
  }
  return Object.freeze({ type, name, value, invert: invert === true, pattern });
}

// IP matching (shared with the blocking conditions): lib/events/ip.ts.
export { ipMatcher, ipNumber, plainIp } from '../events/ip';

// ---------------------------------------------------------------------------------------------------------

function entries(ctx: Ctx, doc: Record<string, unknown>, kind: string): { raw: Record<string, unknown>; seg: Segment[] }[] {
  const v = doc[kind];
  if (v === undefined) return [];
  if (!Array.isArray(v) || !v.every(isTable)) {
    report(ctx, 'error', 'POLICY_TYPE', [kind], `expected an array of tables, written [[${kind}]]`);
    return [];
  }
  return (v as Record<string, unknown>[]).map((raw, i) => ({ raw, seg: [kind, i] }));
}

function named<T extends { readonly name: string; readonly quota: Quota }>(ctx: Ctx, kind: string, list: { value: T | undefined; seg: Segment[] }[], options: PolicyOptions): Map<string, T> {
  const out = new Map<string, T>();
  for (const { value, seg } of list) {
    if (value === undefined) continue;
    if (out.has(value.name)) {
      report(ctx, 'error', 'POLICY_DUPLICATE', [...seg, 'name'], `${kind} policy ${JSON.stringify(value.name)} is defined twice`);
      continue;
    }
    if (value.quota.kind === 'unlimited' && !options.enableUnlimitedTier) {
      report(ctx, 'info', 'POLICY_UNLIMITED_DISABLED', [...seg, 'name'], `${kind} policy ${JSON.stringify(value.name)} is unlimited and [apim.throttling] enable_unlimited_tier is false: it is removed`);
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
export function validatePolicies(doc: unknown, file: string, options: PolicyOptions = DEFAULT_POLICY_OPTIONS, map?: SourceMap): PoliciesResult {
  const ctx: Ctx = { file: file === '' ? '<built-in policies>' : file, map, diagnostics: [], errors: 0 };
  if (!isTable(doc)) {
    report(ctx, 'error', 'POLICY_TYPE', [], 'the policies file is a table');
    return { policies: undefined, diagnostics: ctx.diagnostics };
  }
  for (const k of Object.keys(doc)) {
    if (['subscription', 'application', 'api', 'custom'].includes(k)) continue;
    const near = closest(k, ['subscription', 'application', 'api', 'custom']);
    report(ctx, 'warning', 'POLICY_UNKNOWN_FIELD', [k], `unknown table${near !== undefined ? `; did you mean [[${near}]]?` : ''}`);
  }
  const base = (kind: string, raw: Record<string, unknown>, seg: Segment[]): { name: string; description: string; quota: Quota } | undefined => {
    unknownFields(ctx, kind, raw, seg);
    const name = str(ctx, raw, 'name', seg, true);
    const description = str(ctx, raw, 'description', seg, false) ?? '';
    const q = quota(ctx, raw, seg);
    return name === undefined || q === undefined ? undefined : { name, description, quota: q };
  };

  const subs = entries(ctx, doc, 'subscription').map(({ raw, seg }) => {
    const b = base('subscription', raw, seg);
    const stop = raw.stop_on_quota_reach ?? true;
    if (typeof stop !== 'boolean') report(ctx, 'error', 'POLICY_TYPE', [...seg, 'stop_on_quota_reach'], 'expected true or false');
    let burst: Burst | undefined;
    if (raw.burst !== undefined) {
      const bs = [...seg, 'burst'];
      if (!isTable(raw.burst)) report(ctx, 'error', 'POLICY_TYPE', bs, 'expected a table: { limit = 10, time_unit = "sec" }');
      else {
        unknownFields(ctx, 'burst', raw.burst, bs);
        const limit = posInt(ctx, raw.burst.limit, [...bs, 'limit']);
        const tu = unit(ctx, raw.burst.time_unit ?? 'sec', ['sec', 'min'] as const, [...bs, 'time_unit']);
        if (limit !== undefined && tu !== undefined) burst = Object.freeze({ kind: 'requests', limit, windowMs: TIME_UNITS[tu] });
      }
    }
    const value = b === undefined || typeof stop !== 'boolean' ? undefined : Object.freeze({ ...b, stopOnQuotaReach: stop, burst });
    return { value, seg };
  });
  const apps = entries(ctx, doc, 'application').map(({ raw, seg }) => {
    const b = base('application', raw, seg);
    return { value: b === undefined ? undefined : (Object.freeze(b) as ApplicationPolicy), seg };
  });
  const apis = entries(ctx, doc, 'api').map(({ raw, seg }) => {
    const b = base('api', raw, seg);
    const groups: ConditionGroup[] = [];
    let ok = true;
    const rawGroups = raw.condition_group;
    if (rawGroups !== undefined) {
      if (!Array.isArray(rawGroups) || !rawGroups.every(isTable)) {
        report(ctx, 'error', 'POLICY_TYPE', [...seg, 'condition_group'], 'expected [[api.condition_group]] tables');
        ok = false;
      } else {
        (rawGroups as Record<string, unknown>[]).forEach((g, gi) => {
          const gs = [...seg, 'condition_group', gi];
          unknownFields(ctx, 'condition_group', g, gs);
          const q = quota(ctx, g, gs);
          const rawConds = g.condition;
          if (!Array.isArray(rawConds) || rawConds.length === 0) {
            report(ctx, 'error', 'POLICY_REQUIRED', gs, 'a condition group needs at least one [[api.condition_group.condition]]');
            ok = false;
            return;
          }
          const conds = rawConds.map((c, ci) => condition(ctx, c, [...gs, 'condition', ci]));
          if (q === undefined || conds.some((c) => c === undefined)) {
            ok = false;
            return;
          }
          groups.push(Object.freeze({ description: typeof g.description === 'string' ? g.description : '', conditions: Object.freeze(conds as Condition[]), quota: q }));
        });
      }
    }
    return { value: b === undefined || !ok ? undefined : (Object.freeze({ ...b, groups: Object.freeze(groups) }) as ApiPolicy), seg };
  });
  const customs = entries(ctx, doc, 'custom').map(({ raw, seg }) => {
    const b = base('custom', raw, seg);
    const keyTemplate = str(ctx, raw, 'key_template', seg, true);
    if (keyTemplate !== undefined) {
      const vars = keyTemplate.match(/\$[A-Za-z]+/g) ?? [];
      const bad = vars.find((v) => !(TEMPLATE_VARS as readonly string[]).includes(v));
      if (bad !== undefined) {
        report(ctx, 'error', 'POLICY_VALUE', [...seg, 'key_template'], `${bad} is not a template variable (one of ${TEMPLATE_VARS.join(', ')})`);
        return { value: undefined, seg };
      }
      if (vars.length === 0) report(ctx, 'warning', 'POLICY_VALUE', [...seg, 'key_template'], 'holds no template variable: one counter for every request');
    }
    return { value: b === undefined || keyTemplate === undefined ? undefined : (Object.freeze({ ...b, keyTemplate }) as CustomPolicy), seg };
  });

  const subscription = named(ctx, 'subscription', subs, options);
  const application = named(ctx, 'application', apps, options);
  const api = named(ctx, 'api', apis, options);
  const custom = [...named(ctx, 'custom', customs, options).values()];
  if (ctx.errors > 0) return { policies: undefined, diagnostics: ctx.diagnostics };
  return { policies: Object.freeze({ file, subscription, application, api, custom: Object.freeze(custom) }), diagnostics: ctx.diagnostics };
}

/** Parses and validates a policies file's text. */
export function parsePolicies(text: string, file: string, options: PolicyOptions = DEFAULT_POLICY_OPTIONS): PoliciesResult {
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  let doc: unknown;
  try {
    doc = toml.parse(text);
  } catch (err) {
    const e = err as { message?: string; line?: number; location?: { start?: { line?: number } } };
    return { policies: undefined, diagnostics: [{ level: 'error', code: 'POLICY_SYNTAX', file, line: e.line ?? e.location?.start?.line ?? 0, field: '', message: `not valid TOML: ${e.message ?? String(err)}` }] };
  }
  return validatePolicies(doc, file, options, locateKeys(text));
}

/** Reads the policies file; a missing file gives the built-in defaults. */
export function loadPolicies(file: string, options: PolicyOptions = DEFAULT_POLICY_OPTIONS): PoliciesResult {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return parsePolicies(DEFAULT_POLICIES_TOML, '', options);
    return { policies: undefined, diagnostics: [{ level: 'error', code: 'POLICY_IO', file, line: 0, field: '', message: `cannot read (${(err as Error).message})` }] };
  }
  return parsePolicies(text, file, options);
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
