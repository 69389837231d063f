/**
 * A gateway reading its own apis/ directory follows a GraphQL API's schema file (docs/graphql.md, "An API
 * file"): saving the schema alone redeploys the API; a schema saved invalid keeps the last valid API
 * deployed (API_KEPT_PREVIOUS, logged once), and the schema fixed again is deployed.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { BASE_TOML, request, startGateway, until } from '../gateway/helpers';
import { graphqlApi } from '../scale/helpers';
import { graphqlBackend, SDL } from './backend';

t.test('saving the schema file alone redeploys its GraphQL API', async (t) => {
  const backend = await graphqlBackend();
  const g = await startGateway(BASE_TOML, { orders: graphqlApi(backend.port) }, { 'apis/orders.graphql': SDL });
  t.teardown(async () => {
    await g.close();
    await backend.close();
  });
  const schema = path.join(g.dir, 'apis', 'orders.graphql');
  const query = async (q: string): Promise<string> => {
    const r = await request(g.port, '/orders/1.0.0', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ query: q }),
    });
    return `${r.status} ${/"code":\s*(\d+)/.exec(r.body)?.[1] ?? '-'}`;
  };
  t.equal(await query('{ secret }'), '200 -');

  fs.writeFileSync(schema, SDL.replace('  secret: String\n', ''));
  t.ok(await until(async () => (await query('{ secret }')) === '400 103180', 10_000, 50), 'the removed field is refused after the save');
  t.equal(await query('{ hello }'), '200 -');

  const kept = (): number =>
    g.logger.lines.filter((l) => l.code === 'API_KEPT_PREVIOUS' || (typeof l.message === 'string' && l.message.includes('stays deployed')))
      .length;
  fs.writeFileSync(schema, 'type Query {\n  hello: String\n  nope(: Int\n}\n');
  t.ok(await until(() => kept() > 0, 10_000, 50), 'an invalid schema keeps the last valid API deployed');
  t.equal(await query('{ hello }'), '200 -', 'still served');
  // Another event in the directory with the same invalid schema: not parsed (nor logged) again.
  const logged = kept();
  fs.writeFileSync(path.join(g.dir, 'apis', 'notes.txt'), 'x');
  await new Promise((r) => setTimeout(r, 300));
  t.equal(kept(), logged, 'the same invalid schema is not reported twice');

  fs.writeFileSync(schema, SDL);
  t.ok(await until(async () => (await query('{ secret }')) === '200 -', 10_000, 50), 'the fixed schema is deployed');
});
