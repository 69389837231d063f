/**
 * What a remote console node asks its control plane for a tenant (lib/portal/remote-catalogue.ts,
 * docs/tenants.md "Console nodes"), against an HTTP server standing in for the control plane that records
 * every request and answers as its super admin would (every tenant's files reachable): the tenant's
 * catalogue lists with `?tenant=<its domain>` only, keeps none of the answer's other ids, and sends no
 * request (a write, a move, a .proto file read, uploaded or deleted) for an id of another tenant, of the
 * super tenant or naming a path.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { RemoteCatalogue } from '../../lib/portal/remote-catalogue';
import { ControlPlane } from '../../lib/scale/control-plane';
import { memoryLogger } from '../gateway/helpers';

const API = (name: string): string =>
  `name = "${name}"\ncontext = "/${name.toLowerCase()}"\nversion = "1"\n[endpoints]\nproduction = "http://127.0.0.1:1/x"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;

t.test("a tenant's remote catalogue asks for and sends its own tenant's files only", async (t) => {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method ?? ''} ${req.url ?? ''}`);
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      if (req.method === 'GET')
        // A super admin's answer may hold any tenant's ids: the catalogue keeps its own tenant's.
        res.end(
          JSON.stringify({
            list: [
              { id: 't:acme.test:stock.toml', text: API('Stock') },
              { id: 't:acme.test:created:draft.toml', text: API('Draft') },
              { id: 't:beta.test:secret.toml', text: API('Secret') },
              { id: 'top.toml', text: API('Top') },
              { id: 't:acme.test:../x.toml', text: API('Up') },
            ],
          }),
        );
      else res.end(JSON.stringify({ id: 't:acme.test:created:new.toml', from: 'CREATED' }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const cp = new ControlPlane({
    url: origin,
    user: 'admin',
    password: 'admin-pw-1',
    retry: { first: 10, maxRetries: 0, factor: 1 },
    logger: memoryLogger(),
  });
  const root = new RemoteCatalogue(
    cp,
    origin,
    {},
    { enableUnlimitedTier: true, headerConditions: false, queryConditions: false, claimConditions: false },
  );
  t.equal(root.forTenant('Not A Domain'), undefined, 'no catalogue for a name that is no tenant domain');
  t.equal(root.forTenant('../x'), undefined);
  const acme = root.forTenant('acme.test');
  t.equal(acme?.tenant, 'acme.test');
  await acme?.refresh();
  t.same(seen, ['GET /admin/v1/api-files?tenant=acme.test'], "one request, for acme.test's files");
  t.same(
    acme?.list().map((e) => [e.id, e.state, e.api?.context, e.api?.tenant]),
    [
      ['t:acme.test:stock.toml', 'PUBLISHED', '/t/acme.test/stock', 'acme.test'],
      ['t:acme.test:created:draft.toml', 'CREATED', '/t/acme.test/draft', 'acme.test'],
    ],
    'its own entries only, at their served contexts',
  );
  t.equal(acme?.get('t:beta.test:secret.toml'), undefined, "another tenant's id is not an entry");
  t.same(acme?.draftFor('New', '1'), { id: 't:acme.test:created:new-1.toml', file: 'new-1.toml' }, "a new draft is the tenant's");

  seen.length = 0;
  for (const id of [
    't:beta.test:secret.toml',
    't:beta.test:created:x.toml',
    'top.toml',
    'created:top.toml',
    't:acme.test:../x.toml',
    't:acme.test:created:../../beta.test/secret.toml',
    't:acme.test:sub/x.toml',
    't:acme.test:x.json',
    't:acme.test.evil:x.toml',
  ]) {
    t.match(await acme?.write(id, API('Mole'), false), { status: 404 }, `write ${id}: 404`);
    t.match(await acme?.transition(id, 'PUBLISHED'), { status: 404 }, `move ${id}: 404`);
    t.match(await acme?.putProtos(id, [{ name: 'a.proto', text: '' }]), { status: 404 }, `upload a .proto file of ${id}: 404`);
    t.match(await acme?.deleteProto(id, 'a.proto'), { status: 404 }, `delete a .proto file of ${id}: 404`);
    t.equal(await acme?.protos(id), undefined, `no .proto files of ${id}`);
  }
  t.same(seen, [], 'and no request for any of them');
  t.same(await acme?.write('t:acme.test:created:new.toml', API('New'), true), { id: 't:acme.test:created:new.toml' });
  t.same(await acme?.transition('t:acme.test:created:new.toml', 'PUBLISHED'), { id: 't:acme.test:created:new.toml', from: 'CREATED' });
  t.same(
    seen,
    ['PUT /admin/v1/api-files/t%3Aacme.test%3Acreated%3Anew.toml', 'POST /admin/v1/api-files/t%3Aacme.test%3Acreated%3Anew.toml/lifecycle'],
    'its own ids are sent',
  );
  // The super tenant's catalogue sends no tenant's id either.
  seen.length = 0;
  t.match(await root.write('t:acme.test:stock.toml', API('Mole'), false), { status: 404 });
  t.same(seen, [], "the super tenant's catalogue does not write a tenant's file");
});
