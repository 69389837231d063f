/**
 * The floors of lib/ hold: each floor imports only floors at or below it, the transport knows nothing
 * above it, the services below the gateway do not import it, only the boot and the face import the
 * observers, and no two rooms import each other (docs/architecture.md, "Floors"; the floors themselves are in scripts/lint/floors.ts).
 *
 * A room is a first-level folder of lib/ or a top-level file (lib/node.ts and lib/node/ are the same room,
 * `node`). The graph is read from the sources: every relative `import ... from '...'`, `export ... from
 * '...'`, bare `import '...'`, `import('...')` and `require('...')` of lib/**\/*.ts. Node built-ins and
 * packages are not rooms and are always allowed.
 */
import t from 'tap';
import * as path from 'node:path';
import {
  circlesThrough,
  type Edge,
  type FileEdge,
  fileCircles,
  importsAbove,
  NO_CIRCLES,
  phaseImports,
  readFileGraph,
  mutualPairs,
  observabilityImporters,
  readGraph,
  roomOf,
  roomsWithoutFloor,
  servicesImportGateway,
  transportImportsAbove,
} from '../../scripts/lint/floors';

const root = path.join(__dirname, '..', '..', '..');
const libDir = path.join(root, 'lib');

const said = (rule: string, offenders: string[]): string => (offenders.length === 0 ? rule : `${rule}; offending: ${offenders.join(', ')}`);

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
  t.same(mutualPairs(fake), [
    'gateway <-> throttle: gateway/index.ts -> throttle',
    'gateway <-> throttle: throttle/phase.ts -> gateway/router',
  ]);
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
    ['transport/ and tls/ import nothing above them (only each other, log.ts, config/ and errors.ts)', transportImportsAbove(edges)],
    ['security/, throttle/ and mediation/ do not import gateway/', servicesImportGateway(edges)],
    ['only the boot and the face (node/, index.ts, cli.ts, embed/) import observability/', observabilityImporters(edges)],
    ['no two rooms import each other', mutualPairs(edges)],
    ['every room of lib/ has a floor in FLOORS', roomsWithoutFloor(edges)],
    ['a room imports only rooms at or below its floor', importsAbove(edges)],
  ];
  for (const [rule, offenders] of rules) t.strictSame(offenders, [], said(rule, offenders));
});

t.test('the circle and phase rules report the violations they are shown (so the next test can fail)', async (t) => {
  const e = (from: string, to: string): FileEdge => ({ from, to });
  const planted = [
    e('gateway/phases/index.ts', 'gateway/phases/route.ts'),
    e('gateway/phases/index.ts', 'gateway/phases/context.ts'),
    e('gateway/phases/route.ts', 'gateway/phases/context.ts'),
    e('gateway/phases/send.ts', 'gateway/phases/graphql.ts'),
    e('gateway/graphql-api.ts', 'gateway/phases/throttling.ts'),
    e('gateway/hooks.ts', 'gateway/phases/index.ts'),
    e('gateway/phases/context.ts', 'gateway/hooks.ts'),
    e('keymanager/http.ts', 'keymanager/admin.ts'),
    e('keymanager/admin.ts', 'keymanager/http.ts'),
    e('store/users.ts', 'store/users.ts'),
    e('portal/a.ts', 'portal/b.ts'),
    e('portal/b.ts', 'portal/a.ts'),
  ];
  t.same(phaseImports(planted), [
    'gateway/graphql-api.ts -> gateway/phases/throttling.ts',
    'gateway/phases/send.ts -> gateway/phases/graphql.ts',
  ]);
  t.same(fileCircles(planted), [
    ['gateway/hooks.ts', 'gateway/phases/context.ts', 'gateway/phases/index.ts', 'gateway/phases/route.ts'],
    ['keymanager/admin.ts', 'keymanager/http.ts'],
    ['portal/a.ts', 'portal/b.ts'],
    ['store/users.ts'],
  ]);
  t.same(circlesThrough(planted), [
    '4 files: gateway/hooks.ts, gateway/phases/context.ts, gateway/phases/index.ts, gateway/phases/route.ts',
    '2 files: keymanager/admin.ts, keymanager/http.ts',
    '1 file: store/users.ts',
  ]);
  t.same(circlesThrough([e('a.ts', 'b.ts'), e('b.ts', 'c.ts')]), [], 'a chain without a loop is no circle');
  t.same(
    circlesThrough(planted, NO_CIRCLES, new Map([['keymanager/admin.ts, keymanager/http.ts', 'a reason']])),
    ['4 files: gateway/hooks.ts, gateway/phases/context.ts, gateway/phases/index.ts, gateway/phases/route.ts', '1 file: store/users.ts'],
    'a known circle is passed over',
  );
});

t.test('the file graph is read: types included, folders resolved to their index.ts', async (t) => {
  const edges = readFileGraph(libDir);
  t.ok(
    edges.some((x) => x.from === 'gateway/hooks.ts' && x.to === 'gateway/phases/context.ts'),
    'an import type is an edge',
  );
  t.ok(
    edges.some((x) => x.from === 'gateway/index.ts' && x.to === 'gateway/phases/index.ts'),
    "'./phases' is phases/index.ts",
  );
});

t.test('no phase imports another, and no circle of files runs through the phases, the hooks, keymanager/ or store/', async (t) => {
  const edges = readFileGraph(libDir);
  const phases = phaseImports(edges);
  t.strictSame(phases, [], said('only phases/index.ts imports a phase (context.ts aside)', phases));
  const circles = circlesThrough(edges);
  t.strictSame(circles, [], said(`no circle of files touches ${NO_CIRCLES.join(', ')}`, circles));
});
