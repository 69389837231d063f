/**
 * A state file read (docs/sync.md): YAML parsed with positions, each entry checked against its kind's
 * fields, so a refusal names the file, the line, the entry and the field. Nothing is sent to a node from a
 * file with a refusal.
 */
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node as YamlNode, type Pair, type YAMLMap } from 'yaml';
import { BLOCKING_TYPES, checkBlockingCondition } from '../events/blocking';
import { SUBSCRIPTION_STATES } from '../events/payloads';
import { entryKey, identity, KINDS, sorted, SUPER_TENANT, type Kind, type State } from './state';

/** Codes of a refused file (docs/sync.md, "Refusals"). */
export type SyncCode = 'SYNC_YAML' | 'SYNC_UNKNOWN' | 'SYNC_FIELD' | 'SYNC_DUPLICATE' | 'SYNC_REFERENCE';

export interface Refusal {
  readonly code: SyncCode;
  readonly file: string;
  /** 1-based; 0 when the file gives no place (a reference to an entry the file does not hold). */
  readonly line: number;
  /** `applications[2] (App of admin)`, or '' for the file as a whole. */
  readonly entry: string;
  readonly field: string;
  readonly message: string;
}

export function formatRefusal(r: Refusal): string {
  const where = r.line > 0 ? `${r.file}:${r.line}` : r.file;
  return `${where}: ${r.code}${r.entry !== '' ? ` ${r.entry}` : ''}${r.field !== '' ? ` field ${r.field}` : ''}: ${r.message}`;
}

type FieldType = 'string' | 'boolean' | 'strings' | readonly string[] | 'keys';
interface FieldSpec {
  readonly type: FieldType;
  /** Absent: the field is required. */
  readonly default?: unknown;
}

/** Each kind's fields, with the default a node gives an omitted one (docs/admin-api.md), so that a second apply changes nothing. */
const FIELDS: Readonly<Record<Kind, Readonly<Record<string, FieldSpec>>>> = {
  tenants: {
    domain: { type: 'string' },
    admin: { type: 'string' },
    package: { type: 'string', default: '' },
    active: { type: 'boolean', default: true },
  },
  users: { username: { type: 'string' }, roles: { type: 'strings' } },
  applications: {
    name: { type: 'string' },
    owner: { type: 'string' },
    tier: { type: 'string', default: 'Unlimited' },
    description: { type: 'string', default: '' },
    keys: { type: 'keys', default: [] },
  },
  subscriptions: {
    application: { type: 'string' },
    owner: { type: 'string' },
    api: { type: 'string' },
    version: { type: 'string' },
    tier: { type: 'string', default: 'Unlimited' },
    state: { type: SUBSCRIPTION_STATES, default: 'UNBLOCKED' },
  },
  blockingConditions: { type: { type: BLOCKING_TYPES }, value: { type: 'string' }, invert: { type: 'boolean', default: false } },
};
const KEY_FIELDS: Readonly<Record<string, FieldSpec>> = {
  keyType: { type: ['PRODUCTION', 'SANDBOX'] },
  consumerKey: { type: 'string' },
  grantTypes: { type: 'strings' },
  callbackUrl: { type: 'string', default: '' },
};

/** Bound of a state file (8 MiB): larger is refused before parsing. */
export const MAX_STATE_FILE = 8 * 1024 * 1024;

/** The parsed state with the line of each entry (by kind and identity), or the refusals. */
export interface ReadState {
  readonly state?: State;
  /** The kinds the file names (an empty list included): prune removes entries of these kinds only. */
  readonly kinds: ReadonlySet<Kind>;
  readonly lines: ReadonlyMap<string, number>;
  readonly refusals: readonly Refusal[];
}

export const lineKey = entryKey;

export function parseState(text: string, file: string): ReadState {
  const refusals: Refusal[] = [];
  const lines = new Map<string, number>();
  const kinds = new Set<Kind>();
  const refuse = (code: SyncCode, line: number, entry: string, field: string, message: string): void =>
    void refusals.push({ code, file, line, entry, field, message });
  if (text.length > MAX_STATE_FILE) {
    refuse('SYNC_YAML', 0, '', '', `longer than ${MAX_STATE_FILE} bytes`);
    return { kinds, lines, refusals };
  }
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, uniqueKeys: true, prettyErrors: true });
  for (const e of doc.errors) refuse('SYNC_YAML', e.linePos?.[0].line ?? 0, '', '', e.message.split('\n')[0] ?? e.message);
  if (refusals.length > 0) return { kinds, lines, refusals };
  const lineOf = (n: YamlNode | Pair | null | undefined): number => {
    const range =
      n !== null && n !== undefined && 'range' in n
        ? n.range
        : n !== null && n !== undefined && 'key' in n
          ? (n.key as YamlNode | null)?.range
          : undefined;
    return range !== undefined && range !== null ? lc.linePos(range[0]).line : 0;
  };
  const root = doc.contents;
  const out: Record<Kind, Record<string, unknown>[]> = {
    tenants: [],
    users: [],
    applications: [],
    subscriptions: [],
    blockingConditions: [],
  };
  if (root !== null && !isMap(root)) {
    refuse(
      'SYNC_YAML',
      lineOf(root),
      '',
      '',
      'the file must be a mapping of kinds (tenants, users, applications, subscriptions, blockingConditions)',
    );
    return { kinds, lines, refusals };
  }
  for (const pair of (root as YAMLMap | null)?.items ?? []) {
    const k = isScalar(pair.key) ? String(pair.key.value) : '';
    if (!(KINDS as readonly string[]).includes(k)) {
      refuse('SYNC_UNKNOWN', lineOf(pair), '', k, `unknown kind; a state file holds ${KINDS.join(', ')}`);
      continue;
    }
    const kind = k as Kind;
    kinds.add(kind);
    const v = pair.value as YamlNode | null;
    if (v === null || (isScalar(v) && v.value === null)) continue;
    if (!isSeq(v)) {
      refuse('SYNC_FIELD', lineOf(pair), kind, '', 'must be a list');
      continue;
    }
    v.items.forEach((item, i) => {
      const line = lineOf(item as YamlNode);
      const entry = readEntry(item as YamlNode, FIELDS[kind], `${kind}[${i}]`, line, lineOf, refuse);
      if (entry === undefined) return;
      const id = identity(kind, entry);
      const named = `${kind}[${i}] (${id})`;
      if (lines.has(lineKey(kind, id))) {
        refuse('SYNC_DUPLICATE', line, named, '', `the same entry as line ${lines.get(lineKey(kind, id)) ?? 0}`);
        return;
      }
      lines.set(lineKey(kind, id), line);
      const why = entryCheck(kind, entry);
      if (why !== undefined) refuse('SYNC_FIELD', line, named, why.field, why.message);
      out[kind].push(entry);
    });
  }
  // A subscription's application is one of the file's (a dump writes both; apply creates it first).
  const apps = new Set(out.applications.map((a) => identity('applications', a)));
  out.subscriptions.forEach((s, i) => {
    const app = identity('applications', { name: s.application, owner: s.owner });
    if (!apps.has(app))
      refuse(
        'SYNC_REFERENCE',
        lines.get(lineKey('subscriptions', identity('subscriptions', s))) ?? 0,
        `subscriptions[${i}] (${identity('subscriptions', s)})`,
        'application',
        `no application ${app} in the file`,
      );
  });
  if (refusals.length > 0) return { kinds, lines, refusals };
  return { state: sorted(out as unknown as State), kinds, lines, refusals };
}

/** A kind's own rules beyond field types (the node's checks that a diff can name before a call). */
function entryCheck(kind: Kind, e: Record<string, unknown>): { field: string; message: string } | undefined {
  if (kind === 'tenants' && e.domain === SUPER_TENANT)
    return { field: 'domain', message: `${SUPER_TENANT} is the super tenant: every node has it` };
  if (kind === 'blockingConditions') {
    const why = checkBlockingCondition(String(e.type), String(e.value));
    if (why !== undefined) return { field: 'value', message: why };
    if (e.invert === true && e.type !== 'IP' && e.type !== 'IP_RANGE')
      return { field: 'invert', message: 'invert applies to IP and IP_RANGE conditions only' };
  }
  if (kind === 'applications') {
    const types = (e.keys as { keyType: string }[]).map((k) => k.keyType);
    if (new Set(types).size !== types.length) return { field: 'keys', message: 'one key per keyType' };
  }
  return undefined;
}

type Refuse = (code: SyncCode, line: number, entry: string, field: string, message: string) => void;

/** One mapping read against its fields: defaults filled, unknown and ill-typed fields refused. */
function readEntry(
  node: YamlNode,
  fields: Readonly<Record<string, FieldSpec>>,
  entry: string,
  line: number,
  lineOf: (n: YamlNode | Pair) => number,
  refuse: Refuse,
): Record<string, unknown> | undefined {
  if (!isMap(node)) {
    refuse('SYNC_FIELD', line, entry, '', 'must be a mapping of fields');
    return undefined;
  }
  const out: Record<string, unknown> = {};
  let ok = true;
  const bad = (at: number, field: string, message: string): void => {
    ok = false;
    refuse('SYNC_FIELD', at, entry, field, message);
  };
  for (const pair of node.items) {
    const name = isScalar(pair.key) ? String(pair.key.value) : '';
    const spec = fields[name];
    const at = lineOf(pair);
    if (spec === undefined) {
      ok = false;
      refuse(
        'SYNC_UNKNOWN',
        at,
        entry,
        name,
        `unknown field; ${entry.replace(/\[.*$/, '')} entries have ${Object.keys(fields).join(', ')}`,
      );
      continue;
    }
    const v = pair.value as YamlNode | null;
    if (spec.type === 'keys') {
      if (!isSeq(v)) {
        bad(at, name, 'must be a list of keys');
        continue;
      }
      const keys: Record<string, unknown>[] = [];
      v.items.forEach((k, i) => {
        const key = readEntry(k as YamlNode, KEY_FIELDS, `${entry}.keys[${i}]`, lineOf(k as YamlNode), lineOf, refuse);
        if (key === undefined) ok = false;
        else keys.push(key);
      });
      out[name] = keys;
      continue;
    }
    const value = v === null ? null : isScalar(v) ? v.value : isSeq(v) ? v.items.map((x) => (isScalar(x) ? x.value : x)) : v;
    const why = typeError(spec.type, value);
    if (why !== undefined) bad(at, name, why);
    else out[name] = value;
  }
  for (const [name, spec] of Object.entries(fields)) {
    if (name in out || !ok) continue;
    if (!('default' in spec)) bad(line, name, 'is required');
    else out[name] = spec.default;
  }
  return ok ? out : undefined;
}

function typeError(type: Exclude<FieldType, 'keys'>, v: unknown): string | undefined {
  if (type === 'string') return typeof v === 'string' ? (v.length > 4096 ? 'longer than 4096 characters' : undefined) : 'must be a string';
  if (type === 'boolean') return typeof v === 'boolean' ? undefined : 'must be true or false';
  if (type === 'strings') return Array.isArray(v) && v.every((x) => typeof x === 'string') ? undefined : 'must be a list of strings';
  return typeof v === 'string' && type.includes(v) ? undefined : `must be one of ${type.join(', ')}`;
}
