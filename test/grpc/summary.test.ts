/**
 * The start-up summary's line for a gRPC API (lib/node/summary.ts grpcTry; docs/grpc.md, "Trying it"): a
 * grpcurl command with the API's .proto files, the gateway's HTTP/2 listener and the first served method,
 * never an HTTP curl line at the API's context; on a started node, and for each listener setting.
 */
import * as path from 'node:path';
import t from 'tap';
import { parseApiText } from '../../lib/gateway/apis';
import { grpcTry } from '../../lib/node/summary';
import { startTestNode } from '../observability/node-helpers';
import { PROTO } from './helpers';
import { MESSAGES, SERVICES } from './split-protos';

const API = (auth: string, extra = ''): string =>
  `name = "RouteGuide"\ncontext = "/routeguide"\nversion = "1.0.0"\ntype = "GRPC"\nauth = "${auth}"\n[grpc]\nproto = ["route_guide.proto", "route_messages.proto"]\n[endpoints]\nproduction = "http://127.0.0.1:9"\n${extra}`;

/** The definition of API(...) as a gateway reads it from apis/ (texts given in place of the files). */
function definition(text: string, file: string, disk = true): NonNullable<ReturnType<typeof parseApiText>['api']> {
  const r = parseApiText(text, file, {}, undefined, undefined, {
    protos: [
      { file: 'route_guide.proto', text: SERVICES },
      { file: 'route_messages.proto', text: MESSAGES },
    ],
    disk,
  });
  if (r.api === undefined) throw new Error(JSON.stringify(r.diagnostics));
  return r.api;
}

t.test('grpcTry: h2c, TLS, no HTTP/2 listener, a worker, a method the resources leave out', async (t) => {
  const file = path.resolve('/srv/apis/routeguide.toml');
  const open = definition(API('none'), file);
  const h2c = grpcTry(open, file, { http: 'http://gw.example:8280', https: 'https://gw.example:8243', h2c: true });
  t.equal(
    h2c.line,
    `grpcurl -plaintext -import-path ${path.dirname(file)} -proto route_guide.proto -proto route_messages.proto -d '{}' gw.example:8280 routeguide.RouteGuide/GetFeature`,
    'h2c on the plain listener: -plaintext, the .proto files from the API file directory',
  );
  t.equal(h2c.at, 'gw.example:8280');
  t.equal(h2c.note, undefined);

  const secured = definition(API('oauth2'), file);
  const tls = grpcTry(secured, file, { http: 'http://gw.example:8280', https: 'https://gw.example:8243', h2c: false });
  t.equal(
    tls.line,
    `grpcurl -import-path ${path.dirname(file)} -proto route_guide.proto -proto route_messages.proto -H 'authorization: Bearer <access token>' -d '{}' gw.example:8243 routeguide.RouteGuide/GetFeature`,
    'no h2c: TLS (ALPN h2) on the HTTPS listener, with the token metadata of an OAuth method',
  );
  t.match(tls.note, /-cacert .*-insecure/, 'the certificate note');

  const none = grpcTry(open, file, { http: 'http://gw.example:8280', https: undefined, h2c: false });
  t.equal(none.line, undefined, 'no listener takes HTTP/2: no command');
  t.equal(none.at, 'no HTTP/2 listener');
  t.match(none.note, /h2c = true/);

  // A gateway-worker's API was built from served texts: no directory of this host is named.
  const served = definition(API('none'), 'routeguide.toml', false);
  const worker = grpcTry(served, 'http://cp:9763/apis/routeguide.toml', { http: 'http://w:8280', https: undefined, h2c: true });
  t.equal(
    worker.line,
    `grpcurl -plaintext -proto route_guide.proto -proto route_messages.proto -d '{}' w:8280 routeguide.RouteGuide/GetFeature`,
  );
  t.match(worker.note, /control plane's apis_dir/);

  // The first method a resource serves, not the first the protos declare.
  const one = definition(API('none', '[[resources]]\npath = "/routeguide.Admin/Reset"\n'), file);
  t.match(grpcTry(one, file, { http: 'http://g:1', https: undefined, h2c: true }).line, / g:1 routeguide\.Admin\/Reset$/);
});

t.test("a started node's summary has a grpcurl line for its gRPC API and no curl line at its context", async (t) => {
  const node = await startTestNode(
    `[server]\nhostname = "localhost"\n[throughway.http2]\nh2c = true\n`,
    { routeguide: API('none').replace('proto = ["route_guide.proto", "route_messages.proto"]', 'proto = ["route_guide.proto"]') },
    { 'apis/route_guide.proto': PROTO },
  );
  t.teardown(() => node.close());
  const out = node.out.join('\n');
  const apis = path.join(node.dir, 'apis');
  // The address is the first gateway environment's (lib/gateway/environments.ts), as for the curl lines.
  t.match(out, /RouteGuide 1\.0\.0  gRPC [\w.-]+:\d+  \(PUBLISHED\)/, 'the API line names its HTTP/2 listener');
  t.ok(
    node.out.some((l) =>
      new RegExp(
        `^  grpcurl -plaintext -import-path ${apis.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} -proto route_guide\\.proto -d '\\{\\}' [\\w.-]+:\\d+ routeguide\\.RouteGuide/GetFeature$`,
      ).test(l),
    ),
    'the grpcurl line under Try:',
  );
  t.notOk(
    node.out.some((l) => /^\s*curl .*routeguide/.test(l)),
    'no HTTP curl line for it',
  );
});
