/**
 * A real node (`throughway start`, role default) whose store is PostgreSQL reached through a forwarder the
 * test owns, cut while admin API writes run (docs/security.md, "Faults that must not take the node
 * down"): the process stays up, every write answered 201 before the cut is in the database, writes
 * during the cut are answered 503 with the store's code (never a 500 without one), and writes are
 * answered 201 again once the forwarder relays. Skipped, with the reason, without PostgreSQL.
 */
import t from 'tap';
import { until } from '../gateway/helpers';
import { ADMIN, baseOffset, http, nodeToml, spawnNode, started } from '../scale/helpers';
import { forwarder } from '../store/forwarder';
import { privatePostgres } from '../store/databases';

const LOOPS = 3;

t.test('a PostgreSQL link cut under admin writes: the node stays up and answers with codes', async (t) => {
  const db = await privatePostgres();
  if ('reason' in db) {
    t.skip(db.reason, () => undefined);
    return;
  }
  t.teardown(() => db.drop());
  const fwd = await forwarder(db.port, db.host);
  t.teardown(() => fwd.close());
  const offset = baseOffset(57);
  const store = `[database.apim_db]\ntype = "postgre"\nurl = "${db.urlVia(fwd.port)}"\nusername = "${db.user}"\n${db.password !== undefined ? `password = "${db.password}"\n` : ''}pool_options.maxActive = 4\npool_options.maxWait = 2000\n`;
  const toml = nodeToml({ offset, role: 'default', channel: 'unused' }).replace(
    '[database.apim_db]\ntype = "h2"\nusername = "u"\npassword = "p"\n',
    store,
  );
  const node = spawnNode(toml);
  t.teardown(() => node.stop('SIGKILL'));
  t.ok(await started(node, /Key manager: /, 30_000), `started:\n${node.out}\n${node.err}`);
  const km = `http://127.0.0.1:${9763 + offset}`;

  const acknowledged: string[] = [];
  const refused: { status: number; code: unknown }[] = [];
  let n = 0;
  let running = true;
  const loops = Array.from({ length: LOOPS }, async () => {
    while (running) {
      const name = `app-${n++}`;
      let r: { status: number; body: Record<string, unknown> };
      try {
        r = await http(`${km}/admin/v1/applications`, { json: { name }, auth: ADMIN });
      } catch {
        r = { status: 0, body: {} };
      }
      if (r.status === 201) acknowledged.push(name);
      else refused.push({ status: r.status, code: r.body.code });
    }
  });
  t.ok(await until(() => acknowledged.length >= 20, 20_000), 'writes acknowledged before the cut');

  fwd.hold();
  t.ok(await until(() => fwd.heldBytes > 0, 5000), 'a write is on the wire, unanswered');
  fwd.cut();
  t.ok(await until(() => refused.length >= 2 * LOOPS, 20_000), 'writes refused during the cut');
  t.equal(node.child.exitCode, null, 'the node is still running');
  t.equal(node.child.signalCode, null);

  fwd.restore();
  const ackAtRestore = acknowledged.length;
  t.ok(await until(() => acknowledged.length >= ackAtRestore + 10, 20_000), 'writes acknowledged again after the link is back');
  running = false;
  await Promise.all(loops);

  t.ok(refused.length > 0);
  t.same(
    refused.filter(
      (r) => !(r.status === 503 && (r.code === 'STORE_CONNECTION_LOST' || r.code === 'STORE_CONNECT' || r.code === 'STORE_POOL_TIMEOUT')),
    ),
    [],
    `every refused write is a 503 with a store code (${refused.length} refused)`,
  );
  t.match(node.out + node.err, /store_unavailable/, 'logged');
  const names = new Set(await db.applicationNames());
  t.same(
    acknowledged.filter((a) => !names.has(a)),
    [],
    `every acknowledged write (${acknowledged.length}) is in the database`,
  );
  t.equal(node.child.exitCode, null, 'still running at the end');
});
