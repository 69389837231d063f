/**
 * The floors of lib/ hold: each floor imports only floors at or below it, the transport knows nothing
 * above it, the services below the gateway do not import it, only the boot and the face import the
 * observers, and no two rooms import each other (docs/architecture.md, "Floors").
 *
 * A room is a first-level folder of lib/ or a top-level file (lib/node.ts and lib/node/ are the same room,
 * `node`). The graph is read from the sources: every relative `import ... from '...'`, `export ... from
 * '...'`, bare `import '...'`, `import('...')` and `require('...')` of lib/**\/*.ts. Node built-ins and
 * packages are not rooms and are always allowed.
 */
import t from 'tap';
import * as fs from 'node:fs';
import * as path from 'node:path';

const root = path.join(__dirname, '..', '..', '..');
const libDir = path.join(root, 'lib');

/** One import of one lib/ file by another, with both files' rooms. Files are relative to lib/. */
export interface Edge {
  from: string;
  to: string;
  fromRoom: string;
  toRoom: string;
}

/**
 * The floors, from the ground up. A room imports only rooms on its own floor or below; `exceptions` lists
 * edges allowed anyway ("room -> room"), each with its reason. Empty: the floors hold without exception.
 */
export const FLOORS: readonly (readonly string[])[] = [
  ['log', 'config'], // ground: the logger and the frozen settings
  ['transport', 'tls'], // bytes, protocol states, pools
  ['faults', 'events'], // vocabulary: the fault table, plain events on a bus
  ['security', 'throttle', 'mediation', 'store', 'graphql', 'tenants', 'sdk'], // services with plain inputs; tenants/ reads store/; sdk/ turns an OpenAPI document into client sources
  ['gateway'], // APIs, routing, the phase chain
  ['keymanager', 'scale', 'observability', 'demo', 'portal', 'import', 'mail', 'workflows'], // control plane, its web consoles, its approval workflows, observers, the import and export of the reference's projects, and e-mail (called by the consoles)
  ['node', 'index', 'cli', 'embed'], // boot and face: embed/ is the embedders' createGateway, composed with its observers
];
export const EXCEPTIONS: ReadonlyMap<string, string> = new Map<string, string>([]);

const floorOf = new Map<string, number>();
FLOORS.forEach((rooms, i) => rooms.forEach((r) => floorOf.set(r, i)));

/** The room of a path relative to lib/: its first folder, or the file's name without extension. */
export function roomOf(rel: string): string {
  const parts = rel.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.length === 0) return 'index'; // `from '..'` to lib/ itself is lib/index.ts
  const first = parts[0] as string;
  return parts.length > 1 ? first : first.replace(/\.(ts|js)$/, '');
}

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|\bimport\s+)['"](\.[^'"]*)['"]/g;

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...tsFiles(p));
    else if (e.name.endsWith('.ts')) out.push(p);
  }
  return out.sort();
}

/** Every relative import between two different rooms of lib/. */
export function readGraph(dir: string): Edge[] {
  const edges: Edge[] = [];
  for (const file of tsFiles(dir)) {
    const src = fs.readFileSync(file, 'utf8');
    const from = path.relative(dir, file).split(path.sep).join('/');
    for (const m of src.matchAll(IMPORT)) {
      const target = path.relative(dir, path.resolve(path.dirname(file), m[1] as string)).split(path.sep).join('/');
      const to = target.replace(/\.js$/, '');
      const e = { from, to, fromRoom: roomOf(from), toRoom: roomOf(to) };
      if (e.fromRoom !== e.toRoom) edges.push(e);
    }
  }
  return edges;
}

const show = (e: Edge): string => `${e.from} -> ${e.to}`;
const unique = (xs: string[]): string[] => [...new Set(xs)].sort();

/** transport/ and tls/ import only each other and the ground (the logger, the frozen settings). */
export function transportImportsAbove(edges: readonly Edge[]): string[] {
  const low = new Set(['transport', 'tls']);
  const allowed = new Set(['transport', 'tls', 'log', 'config']);
  return unique(edges.filter((e) => low.has(e.fromRoom) && !allowed.has(e.toRoom)).map(show));
}

/** security/, throttle/ and mediation/ answer questions with plain inputs: none imports gateway/. */
export function servicesImportGateway(edges: readonly Edge[]): string[] {
  const services = new Set(['security', 'throttle', 'mediation']);
  return unique(edges.filter((e) => services.has(e.fromRoom) && e.toRoom === 'gateway').map(show));
}

/** The observers subscribe to events; only the boot and the face (node/, index.ts, cli.ts, embed/) import observability/. */
export function observabilityImporters(edges: readonly Edge[]): string[] {
  const face = new Set(['node', 'index', 'cli', 'embed']);
  return unique(edges.filter((e) => e.toRoom === 'observability' && !face.has(e.fromRoom)).map(show));
}

/** Two rooms that import each other: every edge of each pair, both ways. */
export function mutualPairs(edges: readonly Edge[]): string[] {
  const rooms = new Set(edges.map((e) => `${e.fromRoom} -> ${e.toRoom}`));
  return unique(
    edges.filter((e) => rooms.has(`${e.toRoom} -> ${e.fromRoom}`)).map((e) => {
      const [a, b] = [e.fromRoom, e.toRoom].sort();
      return `${a} <-> ${b}: ${show(e)}`;
    }),
  );
}

/** A room on no floor of FLOORS (a new folder must be given one). */
export function roomsWithoutFloor(edges: readonly Edge[]): string[] {
  return unique(edges.flatMap((e) => [e.fromRoom, e.toRoom]).filter((r) => !floorOf.has(r)));
}

/** Imports of a room above the importer's floor, minus EXCEPTIONS. */
export function importsAbove(edges: readonly Edge[], exceptions: ReadonlyMap<string, string> = EXCEPTIONS): string[] {
  return unique(
    edges
      .filter((e) => floorOf.has(e.fromRoom) && floorOf.has(e.toRoom))
      .filter((e) => (floorOf.get(e.toRoom) as number) > (floorOf.get(e.fromRoom) as number))
      .filter((e) => !exceptions.has(`${e.fromRoom} -> ${e.toRoom}`))
      .map(show),
  );
}

const said = (rule: string, offenders: string[]): string =>
  offenders.length === 0 ? rule : `${rule}; offending: ${offenders.join(', ')}`;

t.test('the rules report a violation they are shown (so this file can fail)', async (t) => {
  const e = (from: string, to: string): Edge => ({ from, to, fromRoom: roomOf(from), toRoom: roomOf(to) });
  t.equal(roomOf('node.ts'), 'node');
  t.equal(roomOf('node/boot.ts'), 'node');
  t.equal(roomOf('log'), 'log');
  t.equal(roomOf(''), 'index');
  const fake = [
    e('transport/source.ts', 'gateway/phases'),
    e('transport/outbound.ts', 'tls/verify'),
    e('tls/verify.ts', 'log'),
    e('throttle/phase.ts', 'gateway/router'),
    e('gateway/index.ts', 'throttle'),
    e('security/index.ts', 'observability/metrics'),
    e('node.ts', 'observability/health'),
    e('attic/old.ts', 'log'),
  ];
  t.same(transportImportsAbove(fake), ['transport/source.ts -> gateway/phases']);
  t.same(servicesImportGateway(fake), ['throttle/phase.ts -> gateway/router']);
  t.same(observabilityImporters(fake), ['security/index.ts -> observability/metrics']);
  t.same(mutualPairs(fake), ['gateway <-> throttle: gateway/index.ts -> throttle', 'gateway <-> throttle: throttle/phase.ts -> gateway/router']);
  t.same(roomsWithoutFloor(fake), ['attic']);
  t.same(importsAbove(fake), [
    'security/index.ts -> observability/metrics',
    'throttle/phase.ts -> gateway/router',
    'transport/source.ts -> gateway/phases',
  ]);
  t.same(importsAbove(fake, new Map([['throttle -> gateway', 'a reason']])), [
    'security/index.ts -> observability/metrics',
    'transport/source.ts -> gateway/phases',
  ]);
  t.same(importsAbove([e('gateway/index.ts', 'transport'), e('security/x.ts', 'throttle/y')]), [], 'down and sideways are allowed');
});

t.test('the graph is read: lib/index.ts imports lib/transport', async (t) => {
  const edges = readGraph(libDir);
  t.ok(edges.length > 50, `${edges.length} edges between rooms`);
  t.ok(edges.some((e) => e.fromRoom === 'index' && e.toRoom === 'transport'));
});

t.test('the floors of lib/ hold', async (t) => {
  const edges = readGraph(libDir);
  const rules: [string, string[]][] = [
    ['transport/ and tls/ import nothing above them (only each other, log.ts and config/)', transportImportsAbove(edges)],
    ['security/, throttle/ and mediation/ do not import gateway/', servicesImportGateway(edges)],
    ['only the boot and the face (node/, index.ts, cli.ts, embed/) import observability/', observabilityImporters(edges)],
    ['no two rooms import each other', mutualPairs(edges)],
    ['every room of lib/ has a floor in FLOORS', roomsWithoutFloor(edges)],
    ['a room imports only rooms at or below its floor', importsAbove(edges)],
  ];
  for (const [rule, offenders] of rules) t.strictSame(offenders, [], said(rule, offenders));
});
