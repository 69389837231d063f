/**
 * The self-service tables of migration 6 (lib/store/selfservice.ts) on every store: SQLite always,
 * PostgreSQL and MySQL/MariaDB when THROUGHWAY_TEST_PG_URL / THROUGHWAY_TEST_MYSQL_URL reach a server
 * (.ci/run exports both): the outbox's due order, claim and attempts; profiles by e-mail (lower case)
 * and organisation; a link used once and not after it expired; posts with replies deleted together;
 * one rating per user with the average.
 */
import t from 'tap';
import { openDatabase, storeOver } from '../../lib/store/open';
import { eachBackend } from './backends';

eachBackend(async (t, backend, opened) => {
  const store = await storeOver(await openDatabase('apim_db', opened.table, opened.cwd));
  t.teardown(() => store.close());
  const s = store.selfService;

  // The outbox.
  const a = await s.enqueueMail({ kind: 'confirm', recipient: 'a@example.org', subject: 'A', body: 'é€'.repeat(8192) }, 1000);
  const b = await s.enqueueMail({ kind: 'recover', recipient: 'b@example.org', subject: 'B', body: 'b', tenant: 'acme.test' }, 2000);
  t.same(
    (await s.dueMails(1500, 10)).map((m) => m.id),
    [a.id],
    'only what is due',
  );
  t.same(
    (await s.dueMails(5000, 10)).map((m) => m.id),
    [a.id, b.id],
    'oldest first',
  );
  t.equal((await s.dueMails(5000, 10))[0]?.body, 'é€'.repeat(8192), 'the longest body the outbox takes, 40 KiB of UTF-8, kept whole');
  t.ok(await s.claimMail(a.id, 1000, 9000), 'claimed');
  t.notOk(await s.claimMail(a.id, 1000, 9000), 'once: another node does not take it too');
  await s.markMailAttempt(a.id, 1, 'pending', 3000, 'ESOCKET: connect ECONNREFUSED');
  t.match((await s.listMails())[0], { state: 'pending', attempts: 1, nextAt: 3000, lastError: 'ESOCKET: connect ECONNREFUSED' });
  await s.markMailSent(a.id, 4000, 2);
  await s.markMailAttempt(b.id, 12, 'failed', 4000, 'EAUTH: refused');
  t.same(
    (await s.listMails()).map((m) => [m.state, m.attempts, m.tenant]),
    [
      ['sent', 2, 'carbon.super'],
      ['failed', 12, 'acme.test'],
    ],
  );
  t.same(await s.dueMails(10_000, 10), [], 'sent and failed mail is not due');

  // Profiles.
  await s.saveProfile({ username: 'ann', tenant: 'carbon.super', email: 'Ann@Example.org', organization: 'Acme', confirmed: false }, 1);
  await s.saveProfile({ username: 'bob', tenant: 'carbon.super', email: 'bob@example.org', organization: 'Acme', confirmed: true }, 1);
  await s.saveProfile(
    { username: 'cat@acme.test', tenant: 'acme.test', email: 'cat@example.org', organization: 'Acme', confirmed: true },
    1,
  );
  t.same(
    (await s.profilesByEmail('ANN@example.org')).map((p) => p.username),
    ['ann'],
    'e-mail compared in lower case',
  );
  t.same(
    (await s.profilesByOrganization('carbon.super', 'Acme')).map((p) => p.username),
    ['ann', 'bob'],
    'an organisation within one tenant',
  );
  t.ok(await s.confirmProfile('ann'));
  t.equal((await s.getProfile('ann'))?.confirmed, true);
  await s.deleteProfile('bob');
  t.equal(await s.getProfile('bob'), undefined);

  // Links: once, before they expire.
  await s.addLink({ tokenHash: 'h1', purpose: 'recover', username: 'ann', expiresAt: 5000 }, 1000);
  t.equal(await s.useLink('h1', 'confirm', 2000), undefined, 'another purpose does not use it');
  t.match(await s.useLink('h1', 'recover', 2000), { username: 'ann', usedAt: 2000 });
  t.equal(await s.useLink('h1', 'recover', 2001), undefined, 'used once');
  await s.addLink({ tokenHash: 'h2', purpose: 'confirm', username: 'ann', expiresAt: 5000 }, 1000);
  t.equal(await s.useLink('h2', 'confirm', 5000), undefined, 'expired');
  await s.addLink({ tokenHash: 'h3', purpose: 'confirm', username: 'ann', expiresAt: 9000 }, 1);
  const both = await Promise.all([s.useLink('h3', 'confirm', 2), s.useLink('h3', 'confirm', 2)]);
  t.equal(both.filter((l) => l !== undefined).length, 1, 'two uses at once: one wins');

  // Posts and ratings.
  const c = await s.addPost(
    { tenant: 'carbon.super', board: 'api:/pizza:1.0', parentId: '', title: '', author: 'ann', body: '<b>hi</b>' },
    10,
  );
  await s.addPost({ tenant: 'carbon.super', board: 'api:/pizza:1.0', parentId: c.id, title: '', author: 'bob', body: 'reply' }, 11);
  await s.addPost(
    { tenant: 'acme.test', board: 'api:/pizza:1.0', parentId: '', title: '', author: 'cat@acme.test', body: 'other tenant' },
    12,
  );
  t.same(
    (await s.listPosts('carbon.super', 'api:/pizza:1.0', 100)).map((p) => p.body),
    ['<b>hi</b>', 'reply'],
    "a tenant's board, oldest first",
  );
  t.equal(await s.countPosts('acme.test', 'api:/pizza:1.0'), 1);
  t.equal(await s.deletePost(c.id), 2, 'a comment goes with its reply');
  t.equal(await s.countPosts('carbon.super', 'api:/pizza:1.0'), 0);
  await s.rate('carbon.super', 'api:/pizza:1.0', 'ann', 4, 1);
  await s.rate('carbon.super', 'api:/pizza:1.0', 'bob', 2, 1);
  await s.rate('carbon.super', 'api:/pizza:1.0', 'bob', 5, 2);
  t.same(await s.ratings('carbon.super', 'api:/pizza:1.0', 'bob'), { count: 2, average: 4.5, mine: 5 }, 'one rating per user, the newest');
  t.same(await s.ratings('acme.test', 'api:/pizza:1.0', undefined), { count: 0, average: undefined, mine: undefined });
});
