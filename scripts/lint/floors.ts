/**
 * The floors of lib/ (docs/architecture.md, "Floors"): each floor imports only floors at or below it, the
 * transport knows nothing above it, the services below the gateway do not import it, only the boot and the
 * face import the observers, and no two rooms import each other. Read by test/unit/floors.test.ts (the
 * whole graph, circles included) and by the lint rule `throughway/floors` (scripts/lint/rules.ts: each
 * import as it is written).
 *
 * A room is a first-level folder of lib/ or a top-level file (lib/node.ts and lib/node/ are the same room,
 * `node`). Node built-ins and packages are not rooms and are always allowed.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

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
  ['log', 'config', 'errors'], // ground: the logger, the frozen settings, the base error class
  ['transport', 'tls'], // bytes, protocol states, pools
  ['faults', 'events'], // vocabulary: the fault table, plain events on a bus
  ['security', 'throttle', 'mediation', 'store', 'graphql', 'grpc', 'tenants', 'sdk', 'audit'], // services with plain inputs; audit/ lints an OpenAPI document (docs/security-audit.md); tenants/ reads store/; sdk/ turns an OpenAPI document into client sources; grpc/ reads .proto files and pools HTTP/2 sessions to backends
  ['gateway'], // APIs, routing, the phase chain
  ['keymanager', 'scale', 'observability', 'demo', 'portal', 'import', 'mail', 'workflows', 'remote'], // control plane, its web consoles, its approval workflows, observers, the import and export of the reference's projects, e-mail (called by the consoles), and remote/ (dump, diff, apply over a node's admin API)
  ['node', 'index', 'cli', 'embed', 'http2'], // boot and face: embed/ is the embedders' createGateway, composed with its observers; http2/ feeds HTTP/2 streams to it over embed's socket pair
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
      const target = path
        .relative(dir, path.resolve(path.dirname(file), m[1] as string))
        .split(path.sep)
        .join('/');
      const to = target.replace(/\.js$/, '');
      const e = { from, to, fromRoom: roomOf(from), toRoom: roomOf(to) };
      if (e.fromRoom !== e.toRoom) edges.push(e);
    }
  }
  return edges;
}

export const show = (e: Edge): string => `${e.from} -> ${e.to}`;
const unique = (xs: string[]): string[] => [...new Set(xs)].sort();

/** transport/ and tls/ import only each other and the ground (the logger, the frozen settings). */
export function transportImportsAbove(edges: readonly Edge[]): string[] {
  const low = new Set(['transport', 'tls']);
  const allowed = new Set(['transport', 'tls', 'log', 'config', 'errors']);
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
    edges
      .filter((e) => rooms.has(`${e.toRoom} -> ${e.fromRoom}`))
      .map((e) => {
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

/** The rules one import breaks on its own (the circles need the whole graph: mutualPairs), in words. */
export function edgeBreaks(e: Edge, exceptions: ReadonlyMap<string, string> = EXCEPTIONS): string[] {
  const one = [e];
  const broken: string[] = [];
  if (roomsWithoutFloor(one).length > 0)
    broken.push(`room "${floorOf.has(e.fromRoom) ? e.toRoom : e.fromRoom}" has no floor in FLOORS (scripts/lint/floors.ts)`);
  if (transportImportsAbove(one).length > 0)
    broken.push('transport/ and tls/ import nothing above them (only each other, log.ts, config/ and errors.ts)');
  if (servicesImportGateway(one).length > 0) broken.push('security/, throttle/ and mediation/ do not import gateway/');
  if (observabilityImporters(one).length > 0)
    broken.push('only the boot and the face (node/, index.ts, cli.ts, embed/) import observability/');
  if (importsAbove(one, exceptions).length > 0)
    broken.push(
      `${e.fromRoom} (floor ${(floorOf.get(e.fromRoom) as number) + 1}) imports ${e.toRoom} (floor ${(floorOf.get(e.toRoom) as number) + 1}), a floor above it`,
    );
  return broken;
}

/** The edge of one relative import written in a file of lib/ (both relative to lib/), or undefined when it leaves lib/ or stays in its room. */
export function edgeOf(fromRel: string, specifier: string): Edge | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const target = path.posix.normalize(path.posix.join(path.posix.dirname(fromRel), specifier));
  if (target.startsWith('..')) return undefined;
  const to = target.replace(/\.js$/, '');
  const e = { from: fromRel, to, fromRoom: roomOf(fromRel), toRoom: roomOf(to) };
  return e.fromRoom === e.toRoom ? undefined : e;
}

/** One import of one lib/ file by another (files relative to lib/, with their extension), types included. */
export interface FileEdge {
  from: string;
  to: string;
}

/**
 * Every relative import between two files of lib/, `import type` included: a circle of types ties the
 * files' meanings together as a circle of values ties their loading. A specifier names `x.ts` or `x/index.ts`.
 */
export function readFileGraph(dir: string): FileEdge[] {
  const edges: FileEdge[] = [];
  for (const file of tsFiles(dir)) {
    const src = fs.readFileSync(file, 'utf8');
    const from = path.relative(dir, file).split(path.sep).join('/');
    for (const m of src.matchAll(IMPORT)) {
      const base = path.resolve(path.dirname(file), (m[1] as string).replace(/\.js$/, ''));
      const target = [`${base}.ts`, path.join(base, 'index.ts')].find((p) => fs.existsSync(p));
      if (target !== undefined) edges.push({ from, to: path.relative(dir, target).split(path.sep).join('/') });
    }
  }
  return edges;
}

/** The circles of files (strongly connected sets of two or more, or a file importing itself), each sorted. */
export function fileCircles(edges: readonly FileEdge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) {
    (next.get(e.from) ?? next.set(e.from, []).get(e.from))?.push(e.to);
    if (!next.has(e.to)) next.set(e.to, []);
  }
  // Tarjan's strongly connected components, iteratively (no recursion depth to mind).
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  for (const root of next.keys()) {
    if (index.has(root)) continue;
    const work: [string, number][] = [[root, 0]];
    while (work.length > 0) {
      const top = work[work.length - 1] as [string, number];
      const [v, i] = top;
      if (i === 0) {
        index.set(v, counter);
        low.set(v, counter);
        counter++;
        stack.push(v);
        onStack.add(v);
      }
      const out = next.get(v) as string[];
      if (i < out.length) {
        top[1] = i + 1;
        const w = out[i] as string;
        if (!index.has(w)) work.push([w, 0]);
        else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent !== undefined) low.set(parent[0], Math.min(low.get(parent[0]) as number, low.get(v) as number));
      if (low.get(v) !== index.get(v)) continue;
      const c: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        c.push(w);
      } while (w !== v);
      if (c.length > 1 || out.includes(v)) circles.push(c.sort());
    }
  }
  return circles.sort((a, b) => (a[0] as string).localeCompare(b[0] as string));
}

/**
 * Folders and files of lib/ that no circle of files may touch (docs/architecture.md, "Floors"): the phase
 * chain and the gateway's hook points, the key manager, the stores.
 */
export const NO_CIRCLES: readonly string[] = ['gateway/phases/', 'gateway/hooks.ts', 'keymanager/', 'store/'];

/**
 * Circles of files allowed anyway, each by its files (sorted, joined by ', ') with its reason; one that
 * gains or loses a file is another circle, and reported. Empty: no circle touches NO_CIRCLES.
 */
export const KNOWN_CIRCLES: ReadonlyMap<string, string> = new Map<string, string>([]);

/** The circles of files that touch a path of `places` (a folder ends in '/'), in words, minus `known`. */
export function circlesThrough(
  edges: readonly FileEdge[],
  places: readonly string[] = NO_CIRCLES,
  known: ReadonlyMap<string, string> = KNOWN_CIRCLES,
): string[] {
  const inPlace = (f: string): boolean => places.some((p) => (p.endsWith('/') ? f.startsWith(p) : f === p));
  return fileCircles(edges)
    .filter((c) => c.some(inPlace) && !known.has(c.join(', ')))
    .map((c) => `${c.length} ${c.length === 1 ? 'file' : 'files'}: ${c.join(', ')}`);
}

/**
 * The gateway's phases are adapters, each alone (docs/architecture.md, "The phase chain"): a file of
 * gateway/phases/ is imported only by the chain (phases/index.ts), save context.ts, the call every phase
 * fills. Whatever two phases share lives outside the folder (the gateway's graphql-api.ts,
 * throttle-call.ts, backend-auth.ts) or in a service.
 */
export function phaseImports(edges: readonly FileEdge[]): string[] {
  const shared = new Set(['gateway/phases/context.ts', 'gateway/phases/index.ts']);
  return unique(
    edges
      .filter((e) => e.to.startsWith('gateway/phases/') && !shared.has(e.to) && e.from !== 'gateway/phases/index.ts')
      .map((e) => `${e.from} -> ${e.to}`),
  );
}
