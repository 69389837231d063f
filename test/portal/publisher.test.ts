/**
 * The publisher over HTTP: a new API is a draft the gateway does not serve; publishing moves it into
 * apis_dir and the control plane publishes api.deployed (the event gateway-workers follow); BLOCKED
 * answers 700700 and publishes the changed file; a transition the lifecycle does not allow is refused
 * (400) and writes nothing; an ON_HOLD subscription is approved; an invalid form writes nothing.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { hidden, publisherForm, req, signIn, startPortalNode } from './helpers';

async function until(f: () => Promise<boolean>, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await f()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

t.test('lifecycle through the publisher, as the gateways see it', async (t) => {
  const node = await startPortalNode();
  t.teardown(() => node.close());
  const events: { name: string; file?: string }[] = [];
  t.teardown(
    node.node.events.subscribe((e) => events.push({ name: e.name, ...('file' in e.payload ? { file: String(e.payload.file) } : {}) })),
  );
  const base = node.base;
  const cookie = await signIn(base);
  const csrf = hidden((await req(`${base}/publisher`, cookie)).text, 'csrf');
  t.match(csrf, /^[A-Za-z0-9_-]{43}$/);
  const backend = /production = "([^"]+)"/.exec(fs.readFileSync(path.join(node.dir, 'apis', 'demo.toml'), 'utf8'))?.[1] ?? '';
  const form = publisherForm(csrf, backend, { version: '2' });

  const invalid = await req(`${base}/publisher/new`, cookie, { ...form, context: 'stock', resources: 'GET menu' });
  t.equal(invalid.status, 400, 'an invalid form');
  t.match(invalid.text, /id="context-error"/);
  t.match(invalid.text, /id="resources-error"/);
  t.notOk(fs.existsSync(path.join(node.dir, 'apis', 'created')), 'writes nothing');
  t.equal((await req(`${base}/publisher/new`, cookie, { ...form, csrf: '' })).status, 403, 'no CSRF token: 403');

  const created = await req(`${base}/publisher/new`, cookie, form);
  t.equal(created.status, 303);
  t.equal(created.location, '/publisher/apis/created%3Astock-2.toml');
  const refused = await req(`${base}/publisher/apis/created%3Astock-2.toml/lifecycle`, cookie, { csrf, state: 'RETIRED' });
  t.equal(refused.status, 400, 'CREATED cannot retire');
  t.match(refused.text, /CREATED cannot move to RETIRED/);

  const published = await req(`${base}/publisher/apis/created%3Astock-2.toml/lifecycle`, cookie, { csrf, state: 'PUBLISHED' });
  t.equal(published.location, '/publisher/apis/stock-2.toml');
  const file = path.join(node.dir, 'apis', 'stock-2.toml');
  t.match(fs.readFileSync(file, 'utf8'), /^state = "PUBLISHED"$/m);
  t.notOk(fs.existsSync(path.join(node.dir, 'apis', 'created', 'stock-2.toml')), 'the draft moved');
  t.ok(await until(async () => (await fetch(`${node.gateway}/stock/2/menu`)).status === 200), 'served once published');
  t.ok(
    await until(async () => events.some((e) => e.name === 'api.deployed' && e.file === 'stock-2.toml')),
    'api.deployed published for gateway-workers',
  );

  events.length = 0;
  await req(`${base}/publisher/apis/stock-2.toml/lifecycle`, cookie, { csrf, state: 'BLOCKED' });
  t.match(fs.readFileSync(file, 'utf8'), /^state = "BLOCKED"$/m);
  let blocked = { status: 0, body: '' };
  t.ok(
    await until(async () => {
      const r = await fetch(`${node.gateway}/stock/2/menu`);
      blocked = { status: r.status, body: await r.text() };
      return r.status === 503;
    }),
    'BLOCKED: 503',
  );
  t.match(blocked.body, /700700/, 'fault 700700');
  t.ok(
    await until(async () => events.some((e) => e.name === 'api.deployed' && e.file === 'stock-2.toml')),
    'the blocked file is published too',
  );

  // Subscriptions of the secured demo API: ON_HOLD approved by the publisher.
  const km = node.node.keyManager;
  const app = await km?.manager.createApplication({ name: 'Waiting', owner: 'admin' });
  const sub = await km?.manager.addSubscription({
    application: app?.id ?? '',
    apiContext: '/pizzashack-secured',
    apiVersion: '1.0.0',
    state: 'ON_HOLD',
  });
  const page = await req(`${base}/publisher/apis/pizzashack-secured.toml`, cookie);
  t.match(page.text, /aria-label="Approve Waiting"/, 'an ON_HOLD subscription can be approved');
  const approved = await req(`${base}/publisher/apis/pizzashack-secured.toml/subscriptions`, cookie, {
    csrf,
    subscription: sub?.id ?? '',
    state: 'UNBLOCKED',
  });
  t.equal(approved.status, 303);
  t.equal((await km?.manager.findSubscription({ id: sub?.id ?? '' }))?.state, 'UNBLOCKED', 'approved');
  const other = await req(`${base}/publisher/apis/stock-2.toml/subscriptions`, cookie, {
    csrf,
    subscription: sub?.id ?? '',
    state: 'BLOCKED',
  });
  t.equal(other.status, 404, "another API's subscription is not this API's to change");
});
