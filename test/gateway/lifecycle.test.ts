/**
 * Lifecycle states at invocation (spec 002, part 3): BLOCKED yields 700700 with HTTP 503; RETIRED is 404
 * (103008); PUBLISHED, PROTOTYPED and DEPRECATED are served.
 */
import t from 'tap';
import { BASE_TOML, apiToml, echoBackend, request, startGateway } from './helpers';

t.test('each lifecycle state at invocation', async (t) => {
  const backend = await echoBackend();
  const ep = `http://127.0.0.1:${backend.port}`;
  const apis: Record<string, string> = {};
  for (const state of ['PUBLISHED', 'PROTOTYPED', 'DEPRECATED', 'BLOCKED', 'RETIRED']) {
    apis[state.toLowerCase()] = apiToml({
      name: state,
      context: `/${state.toLowerCase()}`,
      state,
      endpoint: ep,
      resources: [['/r', ['GET']]],
    });
  }
  const g = await startGateway(BASE_TOML, apis);
  t.teardown(async () => {
    await g.close();
    await backend.close();
  });
  for (const served of ['published', 'prototyped', 'deprecated']) {
    const r = await request(g.port, `/${served}/1.0.0/r`);
    t.equal(r.status, 200, `${served} is served`);
  }
  const seen = backend.seen.length;
  const blocked = await request(g.port, '/blocked/1.0.0/r');
  t.equal(blocked.status, 503);
  t.same(blocked.json(), {
    fault: { code: 700700, type: 'Status report', message: 'API blocked', description: 'The API is in the BLOCKED lifecycle state' },
  });
  const retired = await request(g.port, '/retired/1.0.0/r');
  t.equal(retired.status, 404);
  t.equal(retired.json().fault.code, 103008);
  t.equal(backend.seen.length, seen, 'neither reached the backend');
  const unknownResource = await request(g.port, '/blocked/1.0.0/other');
  t.equal(unknownResource.status, 403, "routing runs before the status check (the reference's handler order)");
});

t.test('an invalid state is refused with the allowed values', async (t) => {
  const g = await startGateway(BASE_TOML, {
    bad: apiToml({ state: 'PUBLISHD', endpoint: 'http://127.0.0.1:1', resources: [['/r', ['GET']]] }),
  });
  t.teardown(() => g.close());
  const d = g.gw.states()[0]?.diagnostics.find((x) => x.code === 'API_ALLOWED');
  t.ok(d);
  t.match(d?.message, /did you mean "PUBLISHED"/);
  t.equal(d?.line, 6, 'after name, context, version, auth and unauthenticated_policy');
  t.equal(g.gw.deployed().length, 0);
});
