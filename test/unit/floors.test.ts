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
  type Edge,
  importsAbove,
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
