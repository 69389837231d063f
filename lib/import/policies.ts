/**
 * `throughway import policies <file or directory>`: throttling policies as the reference's CLI exports
 * them (`type: throttling policy`, subtype subscription / application / advanced policy / custom rule,
 * `data` as the admin REST API's policy DTO) merged into the policies file of docs/throttling.md. The
 * file is edited in place (lib/portal/toml-edit.ts keeps its comments and order); a policy of the same
 * kind and name that differs is replaced only with --force. The merged file is validated by the
 * throttling module's own reader before it is written.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { isTable, parseDocument } from '../config/document';
import { toTomlText } from '../config/print';
import { editToml, sameValue } from '../portal/toml-edit';
import { DEFAULT_POLICIES_TOML, formatPolicyDiagnostic, parsePolicies, type PolicyOptions } from '../throttle/policies';
import { ImportError } from './codes';
import { leftOver, type Dropped } from './dropped';
import { parseProjectFile } from './project';
import type { PlannedFile } from './write';

type Rec = Record<string, unknown>;
const isRec = isTable;

/** The reference's subtypes -> the policies file's kinds. */
const KINDS: Readonly<Record<string, 'subscription' | 'application' | 'api' | 'custom'>> = {
  'subscription policy': 'subscription',
  'application policy': 'application',
  'advanced policy': 'api',
  'custom rule': 'custom',
};

const UNITS: Readonly<Record<string, string>> = {
  sec: 'sec',
  second: 'sec',
  seconds: 'sec',
  s: 'sec',
  min: 'min',
  minute: 'min',
  minutes: 'min',
  m: 'min',
  hour: 'hour',
  hours: 'hour',
  h: 'hour',
  day: 'day',
  days: 'day',
  d: 'day',
};

export interface PolicyImport {
  readonly kind: 'subscription' | 'application' | 'api' | 'custom';
  readonly entry: Rec;
  readonly dropped: readonly Dropped[];
}

function unit(v: unknown, where: string): string {
  const u = UNITS[String(v ?? 'min').toLowerCase()];
  if (u === undefined)
    throw new ImportError('IMPORT_FIELD', where, `time unit ${JSON.stringify(v)}: the policies file counts per sec, min, hour or day`);
  return u;
}

/** A defaultLimit / limit DTO -> request_count | data_amount + data_unit, unit_time, time_unit. */
function quotaOf(limit: unknown, where: string): Rec {
  if (!isRec(limit)) throw new ImportError('IMPORT_FIELD', where, 'a policy needs its limit');
  const type = String(limit.type ?? '').toUpperCase();
  if (type === 'REQUESTCOUNTLIMIT' || type === 'REQUESTCOUNT') {
    const r = isRec(limit.requestCount) ? limit.requestCount : {};
    if (Number(r.requestCount) === -1) return { unlimited: true };
    return {
      request_count: Number(r.requestCount),
      unit_time: Number(r.unitTime ?? 1),
      time_unit: unit(r.timeUnit, `${where}.requestCount.timeUnit`),
    };
  }
  if (type === 'BANDWIDTHLIMIT' || type === 'BANDWIDTH') {
    const b = isRec(limit.bandwidth) ? limit.bandwidth : {};
    return {
      data_amount: Number(b.dataAmount),
      data_unit: String(b.dataUnit ?? 'KB').toUpperCase(),
      unit_time: Number(b.unitTime ?? 1),
      time_unit: unit(b.timeUnit, `${where}.bandwidth.timeUnit`),
    };
  }
  throw new ImportError(
    'IMPORT_FIELD',
    `${where}.type`,
    `${type || 'no type'}: the policies file counts requests or bandwidth (REQUESTCOUNTLIMIT, BANDWIDTHLIMIT)`,
  );
}

/** A reference condition DTO -> a condition of the policies file. */
function conditionOf(c: Rec, where: string): Rec {
  const invert = c.invertCondition === true;
  const t = String(c.type ?? '').toUpperCase();
  const out = (type: string, value: unknown, name?: unknown): Rec => ({
    type,
    ...(name !== undefined ? { name: String(name) } : {}),
    value: String(value),
    ...(invert ? { invert: true } : {}),
  });
  if (t === 'IPCONDITION' && isRec(c.ipCondition)) {
    const ip = c.ipCondition;
    return String(ip.ipConditionType).toUpperCase() === 'IPRANGE'
      ? out('ip_range', `${String(ip.startingIP)}-${String(ip.endingIP)}`)
      : out('ip', ip.specificIP);
  }
  if (t === 'HEADERCONDITION' && isRec(c.headerCondition))
    return out('header', c.headerCondition.headerValue, c.headerCondition.headerName);
  if (t === 'QUERYPARAMETERCONDITION' && isRec(c.queryParameterCondition))
    return out('query', c.queryParameterCondition.parameterValue, c.queryParameterCondition.parameterName);
  if (t === 'JWTCLAIMSCONDITION' && isRec(c.jwtClaimsCondition))
    return out('claim', c.jwtClaimsCondition.attribute, c.jwtClaimsCondition.claimUrl);
  throw new ImportError(
    'IMPORT_FIELD',
    where,
    `condition type ${t || '(none)'} is not one of IPCONDITION, HEADERCONDITION, QUERYPARAMETERCONDITION, JWTCLAIMSCONDITION`,
  );
}

/**
 * A custom rule's Siddhi query reduced to its quota: the reference's template
 * (`#throttler:timeBatch(1 min)` ... `having count(messageID) >= 5`) is the only shape read.
 */
function siddhiQuota(q: unknown, where: string): Rec {
  const text = String(q ?? '');
  const batch = /timeBatch\(\s*(\d+)\s*([a-z]+)\s*\)/i.exec(text);
  const count = /count\([^)]*\)\s*>=\s*(\d+)/i.exec(text);
  if (batch === null || count === null)
    throw new ImportError(
      'IMPORT_FIELD',
      where,
      "the Siddhi query is not the reference's custom rule template (timeBatch(N unit) ... count(...) >= N): write the [[custom]] policy by hand (docs/throttling.md)",
    );
  return { request_count: Number(count[1]), unit_time: Number(batch[1]), time_unit: unit(batch[2], where) };
}

/** One exported policy file -> one entry of the policies file, with what it leaves out. */
export function convertPolicy(bytes: Buffer, where: string): PolicyImport {
  const doc = parseProjectFile(bytes, where);
  if (!isRec(doc) || !isRec(doc.data))
    throw new ImportError('IMPORT_NOT_PROJECT', where, 'not an exported throttling policy (type: throttling policy, subtype, data)');
  const kind = KINDS[String(doc.subtype ?? '').toLowerCase()];
  if (kind === undefined)
    throw new ImportError(
      'IMPORT_FIELD',
      `${where}:subtype`,
      `${JSON.stringify(doc.subtype ?? null)} is not one of ${Object.keys(KINDS).join(', ')}`,
    );
  const d = doc.data;
  const at = (k: string): string => `${where}:data.${k}`;
  const name = typeof d.policyName === 'string' && d.policyName !== '' ? d.policyName : undefined;
  if (name === undefined) throw new ImportError('IMPORT_FIELD', at('policyName'), 'a policy needs its policyName');
  const read = new Set(['policyName', 'description', 'defaultLimit', 'type', 'isDeployed', 'policyId', 'uuid', 'displayName']);
  const entry: Rec = { name, ...(typeof d.description === 'string' && d.description !== '' ? { description: d.description } : {}) };
  if (kind === 'custom') {
    read.add('siddhiQuery').add('keyTemplate');
    if (typeof d.keyTemplate !== 'string' || d.keyTemplate === '')
      throw new ImportError('IMPORT_FIELD', at('keyTemplate'), 'a custom rule needs its keyTemplate');
    Object.assign(entry, siddhiQuota(d.siddhiQuery, at('siddhiQuery')), { key_template: d.keyTemplate });
  } else Object.assign(entry, quotaOf(d.defaultLimit, at('defaultLimit')));
  if (kind === 'subscription') {
    read.add('stopOnQuotaReach').add('rateLimitCount').add('rateLimitTimeUnit').add('graphQLMaxDepth').add('graphQLMaxComplexity');
    entry.stop_on_quota_reach = d.stopOnQuotaReach !== false;
    if (Number(d.rateLimitCount) > 0)
      entry.burst = { limit: Number(d.rateLimitCount), time_unit: unit(d.rateLimitTimeUnit ?? 'sec', at('rateLimitTimeUnit')) };
    if (Number(d.graphQLMaxDepth) > 0) entry.graphql_max_depth = Number(d.graphQLMaxDepth);
    if (Number(d.graphQLMaxComplexity) > 0) entry.graphql_max_complexity = Number(d.graphQLMaxComplexity);
  }
  if (kind === 'api') {
    read.add('conditionalGroups');
    const groups = Array.isArray(d.conditionalGroups) ? d.conditionalGroups.filter(isRec) : [];
    if (groups.length > 0) {
      entry.condition_group = groups.map((g, i) => ({
        ...(typeof g.description === 'string' && g.description !== '' ? { description: g.description } : {}),
        ...quotaOf(g.limit, at(`conditionalGroups[${i}].limit`)),
        condition: (Array.isArray(g.conditions) ? g.conditions.filter(isRec) : []).map((c, j) =>
          conditionOf(c, at(`conditionalGroups[${i}].conditions[${j}]`)),
        ),
      }));
    }
  }
  const dropped = leftOver(d, read, `${where}:data.`).map((x) => ({
    path: x.path,
    why: /billing|monetization|permissions|customAttributes|subscriberCount/i.test(x.path)
      ? 'billing, monetization and per-role permissions of tiers are not kept'
      : 'the policies file has no such field',
  }));
  return { kind, entry, dropped };
}

/** The exported policy files named: one file, or every .yaml / .yml / .json file of a directory. */
export function policyFiles(source: string, cwd: string): { file: string; bytes: Buffer }[] {
  const abs = path.resolve(cwd, source);
  let st: fs.Stats;
  try {
    st = fs.statSync(abs);
  } catch (err) {
    throw new ImportError('IMPORT_IO', source, (err as Error).message);
  }
  const names = st.isDirectory()
    ? fs
        .readdirSync(abs)
        .filter((n) => /\.(ya?ml|json)$/.test(n))
        .sort()
        .map((n) => path.join(source, n))
    : [source];
  if (names.length === 0) throw new ImportError('IMPORT_NOT_PROJECT', source, 'no .yaml, .yml or .json policy files in it');
  if (names.length > 1000) throw new ImportError('IMPORT_LIMIT', source, 'more than 1000 policy files');
  return names.map((file) => {
    const s = fs.statSync(path.resolve(cwd, file));
    if (s.size > 1024 * 1024) throw new ImportError('IMPORT_LIMIT', file, 'larger than 1 MiB');
    return { file, bytes: fs.readFileSync(path.resolve(cwd, file)) };
  });
}

export interface MergeResult {
  readonly file: PlannedFile;
  /** Per policy: new, unchanged, or replaced. */
  readonly outcomes: readonly { readonly kind: string; readonly name: string; readonly outcome: 'new' | 'unchanged' | 'replaced' }[];
}

/**
 * The policies file with the imported entries merged in (by kind and name). Without `force` an entry
 * that exists and differs refuses the whole import (IMPORT_EXISTS). A missing file starts from the
 * built-in defaults, as the gateway reads it (docs/throttling.md).
 */
export function mergePolicies(policiesFile: string, imports: readonly PolicyImport[], force: boolean, options: PolicyOptions): MergeResult {
  const text = fs.existsSync(policiesFile) ? fs.readFileSync(policiesFile, 'utf8') : DEFAULT_POLICIES_TOML.trimStart();
  const parsed = parseDocument(text, policiesFile, { syntax: 'POLICY_SYNTAX' });
  if (!parsed.ok || !isTable(parsed.doc))
    throw new ImportError('IMPORT_YAML', policiesFile, 'the policies file does not parse: run `throughway config check`');
  const old = parsed.doc;
  const next: Rec = JSON.parse(JSON.stringify(old)) as Rec;
  const outcomes: { kind: string; name: string; outcome: 'new' | 'unchanged' | 'replaced' }[] = [];
  for (const p of imports) {
    const list = (Array.isArray(next[p.kind]) ? next[p.kind] : (next[p.kind] = [])) as Rec[];
    const i = list.findIndex((e) => e.name === p.entry.name);
    if (i < 0) {
      list.push(p.entry);
      outcomes.push({ kind: p.kind, name: String(p.entry.name), outcome: 'new' });
      continue;
    }
    const existing = list[i] as Rec;
    // Defaults of the file's fields are not written by everybody: compared as the reader fills them.
    const filled = (e: Rec): Rec => ({
      description: '',
      unit_time: 1,
      time_unit: 'min',
      ...(p.kind === 'subscription' ? { stop_on_quota_reach: true } : {}),
      ...e,
    });
    if (sameValue(filled(existing), filled(p.entry))) {
      outcomes.push({ kind: p.kind, name: String(p.entry.name), outcome: 'unchanged' });
      continue;
    }
    if (!force)
      throw new ImportError(
        'IMPORT_EXISTS',
        `${policiesFile}:${p.kind}.${String(p.entry.name)}`,
        `the ${p.kind} policy ${JSON.stringify(p.entry.name)} exists with other values, not replaced without --force; nothing written`,
      );
    list[i] = p.entry;
    outcomes.push({ kind: p.kind, name: String(p.entry.name), outcome: 'replaced' });
  }
  const out = editToml(text, old, next, (_arr, e) => (typeof e.name === 'string' ? e.name : undefined)) ?? toTomlText(next);
  const check = parsePolicies(out, policiesFile, options);
  const errors = check.diagnostics.filter((d) => d.level === 'error');
  if (errors.length > 0)
    throw new ImportError(
      'IMPORT_FIELD',
      policiesFile,
      `the merged policies file would not load: ${errors.map(formatPolicyDiagnostic).join('; ')}`,
    );
  return { file: { path: policiesFile, bytes: Buffer.from(out) }, outcomes };
}
