/**
 * A gRPC API in the developer portal (docs/portal.md, "gRPC APIs"): its page lists the services and methods
 * of its .proto files, each with its call kind, request and response types and its resource's rules
 * (authentication, scopes with roles, policy; a method the resources leave out shown as not served), says
 * how to call it with grpcurl and @grpc/grpc-js, and has no OpenAPI section; the try-it tab offers no HTTP
 * form for it and a posted try-it form for it is refused with nothing sent.
 */
import t from 'tap';
import { startTestNode } from '../observability/node-helpers';
import { PROTO } from '../grpc/helpers';
import { GRPC_PORTAL_API as GRPC_API, hiddenField, PORTAL_TOML, req, signIn } from './helpers';

t.test('the API page lists services and methods with kinds, types and rules; no OpenAPI view; no HTTP try-it', async (t) => {
  const node = await startTestNode(PORTAL_TOML, { routeguide: GRPC_API }, { 'apis/route_guide.proto': PROTO });
  t.teardown(() => node.close());
  const base = `http://127.0.0.1:${node.mgmt}`;

  const r = await fetch(`${base}/devportal/apis/routeguide.toml`);
  t.equal(r.status, 200);
  const html = await r.text();
  t.match(html, /<h2 id="grpc">gRPC services<\/h2>/);
  t.match(html, /2 services, 9 methods, from <code>route_guide\.proto<\/code>/);
  t.match(html, /<h3>Service <code>routeguide\.RouteGuide<\/code><\/h3>/);
  t.match(html, /<h3>Service <code>routeguide\.Admin<\/code><\/h3>/);
  t.match(
    html,
    /<tr><td><code>GetFeature<\/code><\/td><td>unary<\/td><td><code>Point<\/code><\/td><td><code>Feature<\/code><\/td><td>OAuth 2\.0 token<\/td><td><\/td><td><\/td><\/tr>/,
    'a unary method with its types',
  );
  t.match(
    html,
    /<td><code>ListFeatures<\/code><\/td><td>server streaming<\/td><td><code>Rectangle<\/code><\/td><td><code>Feature<\/code><\/td><td colspan="3">not served \(UNIMPLEMENTED\)<\/td>/,
  );
  t.match(
    html,
    /<td><code>RecordRoute<\/code><\/td><td>client streaming<\/td><td><code>Point<\/code><\/td><td><code>RouteSummary<\/code><\/td><td>OAuth 2\.0 token<\/td><td>route:write \(roles: admin\)<\/td><td>10PerMin<\/td>/,
    'scopes with roles and the policy of the method',
  );
  t.match(
    html,
    /<td><code>RouteChat<\/code><\/td><td>bidirectional streaming<\/td><td><code>Point<\/code><\/td><td><code>Feature<\/code><\/td><td>none<\/td>/,
  );
  t.match(
    html,
    new RegExp(
      `grpcurl -plaintext -proto route_guide\\.proto -H 'authorization: Bearer \\$TOKEN' -d '\\{\\}' 127\\.0\\.0\\.1:${node.gw} routeguide\\.RouteGuide/GetFeature`,
    ),
    'a grpcurl line naming the gateway and a method',
  );
  t.match(html, /grpc\.credentials\.createInsecure\(\)/, 'a grpc-js sketch');
  t.notMatch(html, /OpenAPI document/, 'no OpenAPI view');
  t.notMatch(html, /<h2>Resources<\/h2>/, 'no HTTP resource table');

  const cookie = await signIn(base);
  const csrf = hiddenField((await req(`${base}/devportal/applications`, cookie)).text, 'csrf');
  const made = await req(`${base}/devportal/applications`, cookie, { name: 'GrpcApp', csrf });
  t.equal(made.status, 303, 'an application');
  const tab = await req(`${base}${made.location}?tab=try&api=routeguide.toml`, cookie);
  t.equal(tab.status, 200);
  t.match(tab.text, /id="grpc-note"/, 'the try-it tab shows the note');
  t.match(tab.text, /RouteGuide 1\.0\.0 \(gRPC\)/, 'named a gRPC API in the chooser');
  t.notMatch(tab.text, /id="op-custom"/, 'no HTTP form');
  const posted = await req(`${base}${made.location}/try`, cookie, {
    csrf,
    api: 'routeguide.toml',
    method: 'POST',
    path: '/routeguide.RouteGuide/GetFeature',
    tryKeyType: 'PRODUCTION',
  });
  t.equal(posted.status, 400, 'a posted try-it form is refused');
  t.match(posted.text, /A gRPC API is not called from this page/);
});
