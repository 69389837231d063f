/**
 * A database link cut while a statement runs (docs/security.md, "Faults that must not take the node
 * down"): a forwarder the test owns sits between the store and PostgreSQL / MariaDB. It holds a write
 * (the statement is sent, nothing answers) and then cuts every connection. The process stays up (pg
 * emitted 'error' on the checked-out client with no listener, which ended it), the write in flight fails
 * with STORE_CONNECTION_LOST, writes during the cut fail with a store-unavailable code, writes
 * acknowledged before the cut are in the database, and writes work again once the forwarder relays.
 */
import t from 'tap';
import { openDatabase, storeOver } from '../../lib/store/open';
import { STORE_UNAVAILABLE_CODES, type StoreErrorCode } from '../../lib/store/types';
import { until } from '../gateway/helpers';
import { forwarder } from './forwarder';
import { privateMysql, privatePostgres, type PrivateDatabase } from './databases';

const CASES: readonly [string, () => Promise<PrivateDatabase | { reason: string }>][] = [
  ['postgres', privatePostgres],
  ['mysql', privateMysql],
];

for (const [name, open] of CASES) {
  t.test(`${name}: a link cut during a write`, async (t) => {
    const db = await open();
    if ('reason' in db) {
      t.skip(`${name}: ${db.reason}`, () => undefined);
      return;
    }
    t.teardown(() => db.drop());
    const fwd = await forwarder(db.port, db.host);
    t.teardown(() => fwd.close());
    const driver = await openDatabase(
      'apim_db',
      {
        type: db.kind,
        url: db.urlVia(fwd.port),
        username: db.user,
        ...(db.password !== undefined ? { password: db.password } : {}),
        pool_options: { maxActive: '4', maxWait: 2000 },
      },
      '/',
    );
    const store = await storeOver(driver);
    t.teardown(() => store.close());
    const write = (n: string) => store.createApplication({ name: n, owner: 'admin', tier: 'Unlimited', description: '' });

    const acknowledged: string[] = [];
    for (let i = 0; i < 5; i++) acknowledged.push((await write(`before-${i}`)).name);

    fwd.hold();
    const inFlight = write('in-flight').then(
      () => 'acknowledged' as const,
      (err: { code?: StoreErrorCode }) => err.code,
    );
    t.ok(await until(() => fwd.heldBytes > 0, 5000), 'the write is on the wire, unanswered');
    fwd.cut();
    t.equal(await inFlight, 'STORE_CONNECTION_LOST', 'the write in flight fails with STORE_CONNECTION_LOST');

    const during: (StoreErrorCode | undefined)[] = [];
    for (let i = 0; i < 3; i++) {
      during.push(
        await write(`during-${i}`).then(
          () => undefined,
          (err: { code?: StoreErrorCode }) => err.code,
        ),
      );
    }
    t.ok(
      during.every((c) => c !== undefined && STORE_UNAVAILABLE_CODES.has(c)),
      `writes during the cut fail with a store-unavailable code (${during.join(', ')})`,
    );

    fwd.restore();
    let after = '';
    t.ok(
      await until(
        async () => {
          try {
            after = (await write(`after-${Date.now()}`)).name;
            return true;
          } catch {
            return false;
          }
        },
        10_000,
        50,
      ),
      'writes work again once the link is back',
    );
    const names = await db.applicationNames();
    for (const n of [...acknowledged, after]) t.ok(names.includes(n), `acknowledged write ${n} is in the database`);
    t.notOk(
      names.some((n) => n.startsWith('during-')),
      'no write refused during the cut was stored',
    );
  });
}
