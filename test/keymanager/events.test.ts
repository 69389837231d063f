/**
 * The in-process event bus: order, per-name subscriptions, unsubscribe, a failing subscriber isolated,
 * and events that arrive from elsewhere (the Redis event hub, docs/scale-out.md) delivered unchanged.
 */
import t from 'tap';
import { createEventBus, EVENT_NAMES, type AnyEvent } from '../../lib/events/bus';

t.test('publish, subscribe, on, unsubscribe, deliver', async (t) => {
  const errors: unknown[] = [];
  const bus = createEventBus((err) => errors.push(err));
  const all: AnyEvent[] = [];
  const revoked: string[] = [];
  bus.subscribe(() => {
    throw new Error('broken subscriber');
  });
  const off = bus.subscribe((e) => all.push(e));
  const offOn = bus.on('token.revoked', (e) => revoked.push(e.payload.jti));
  const e1 = bus.publish('token.revoked', { jti: 'j1', expiresAt: 2, consumerKey: 'ck', revokedAt: 1 });
  bus.publish('policy.changed', { kind: 'subscription', name: 'Gold', change: 'changed' });
  t.equal(errors.length, 2, 'a throwing subscriber is reported, the others still run');
  t.same(
    all.map((e) => e.name),
    ['token.revoked', 'policy.changed'],
  );
  t.same(revoked, ['j1']);
  t.type(e1.id, 'string');
  t.type(e1.time, 'number');
  const remote = JSON.parse(JSON.stringify(e1)) as AnyEvent;
  bus.deliver(remote);
  t.equal(all[2], remote, 'delivered as received');
  off();
  offOn();
  bus.publish('token.revoked', { jti: 'j2', expiresAt: 2, consumerKey: 'ck', revokedAt: 1 });
  t.equal(all.length, 3);
  t.same(revoked, ['j1', 'j1']);
  t.equal(
    EVENT_NAMES.length,
    13,
    'eight of the key manager, blocking.added and blocking.removed of throttling, api.deployed, api.undeployed and policies.updated of the control plane',
  );
});
