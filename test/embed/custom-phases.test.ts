/**
 * Custom phases at named points of the chain: order before/after built-in phases, a phase that answers,
 * one that faults (a table code and a code of its own, rendered like every fault), async phases, a phase
 * that adds a field for the backend, failures turned into 103142, and placements refused at creation.
 */
import t from 'tap';
import { PHASES, type CallContext } from '../../lib/gateway/phases';
import { ApiCode } from '../../lib/faults';
import { customFault, gatewayFault, localAnswer, type CustomPhase } from '../../lib/embed/phases';
import { api, echoBackend, embedded, field } from './helpers';

function recorder(name: string, trail: string[], extra?: (ctx: CallContext) => ReturnType<CustomPhase['run']>): CustomPhase {
  return {
    name,
    run(ctx) {
      // What the chain had done when this phase ran: route sets ctx.api, cors sets ctx.cors.
      trail.push(`${name}:${ctx.api === undefined ? 'no-api' : 'api'}:${ctx.cors === undefined ? 'no-cors' : 'cors'}`);
      return extra?.(ctx);
    },
  };
}

t.test('phases run before and after the named built-in phases, in the order given', async (t) => {
  const backend = await echoBackend();
  const trail: string[] = [];
  const { gw } = embedded([api('Shop', '/shop', `http://127.0.0.1:${backend.port}`)], {
    phases: [
      { after: 'authentication', phase: recorder('audit', trail) },
      { before: 'route', phase: recorder('first', trail) },
      { after: 'route', phase: recorder('after-route', trail) },
      { before: 'send', phase: recorder('before-send', trail) },
      { after: 'authentication', phase: recorder('audit-2', trail) },
    ],
  });
  t.teardown(async () => {
    await gw.close();
    await backend.close();
  });
  t.equal((await gw.inject({ url: '/shop/v1/a' })).status, 200);
  t.same(trail, ['first:no-api:no-cors', 'after-route:api:no-cors', 'audit:api:cors', 'audit-2:api:cors', 'before-send:api:cors']);
  t.equal(PHASES.length, 8, 'PHASES, the default chain, is unchanged');
  trail.length = 0;
  t.equal((await gw.inject({ url: '/nope/v1/a' })).status, 404);
  t.same(trail, ['first:no-api:no-cors'], 'a route fault stops the chain: later phases do not run');
});

t.test('a phase answers, faults with a table code or its own, or adds a field for the backend', async (t) => {
  const backend = await echoBackend();
  const { gw } = embedded([api('Shop', '/shop', `http://127.0.0.1:${backend.port}`)], {
    phases: [
      {
        after: 'cors',
        phase: {
          name: 'gate',
          run(ctx) {
            const rest = ctx.rest;
            if (rest === '/health') return localAnswer(200, ['Content-Type', 'text/plain'], 'up\n');
            if (rest === '/forbidden') return { fault: gatewayFault(ApiCode.RESOURCE_FORBIDDEN, { description: 'not for you' }) };
            if (rest === '/teapot')
              return {
                fault: customFault({ code: 999001, status: 418, message: 'Teapot', description: 'short and stout', retryAfterMs: 2500 }),
              };
            return undefined;
          },
        },
      },
      {
        // After transport-headers the outgoing fields are built: a field added then never reaches the backend.
        after: 'transport-headers',
        phase: {
          name: 'too-late',
          run(ctx) {
            ctx.addRequestHeaders = [...(ctx.addRequestHeaders ?? []), 'X-Late', '1'];
            return undefined;
          },
        },
      },
      {
        before: 'transport-headers',
        phase: {
          name: 'tag',
          async run(ctx) {
            await new Promise((r) => setImmediate(r));
            ctx.addRequestHeaders = [...(ctx.addRequestHeaders ?? []), 'X-Tenant', 'acme'];
            return undefined;
          },
        },
      },
    ],
  });
  t.teardown(async () => {
    await gw.close();
    await backend.close();
  });
  const health = await gw.inject({ url: '/shop/v1/health' });
  t.equal(health.status, 200);
  t.equal(health.body, 'up\n');
  t.equal(backend.seen.length, 0, 'answered by the phase: the backend saw nothing');

  const forbidden = await gw.inject({ url: '/shop/v1/forbidden', headers: { Origin: 'http://example.com' } });
  t.equal(forbidden.status, 403);
  t.match(forbidden.json(), { fault: { code: 900908, message: 'Resource forbidden', description: 'not for you' } });

  const teapot = await gw.inject({ url: '/shop/v1/teapot' });
  t.equal(teapot.status, 418);
  t.equal(teapot.headers['retry-after'], '3');
  t.same(teapot.json(), { fault: { code: 999001, type: 'Status report', message: 'Teapot', description: 'short and stout' } });

  const passed = await gw.inject({ url: '/shop/v1/items' });
  t.equal(passed.status, 200, 'an async phase continues the chain');
  t.equal(
    field(passed.json<{ headers: string[] }>().headers, 'x-tenant'),
    'acme',
    'the field added before transport-headers reached the backend',
  );
  t.equal(field(passed.json<{ headers: string[] }>().headers, 'x-late'), undefined, 'the one added after it did not: placement is exact');
  t.throws(() => customFault({ code: 1, status: 200, message: 'x' }), { code: 'GATEWAY_PHASES', name: 'PhaseOptionsError' });
});

t.test('a phase that throws or rejects gives fault 103142 and is logged', async (t) => {
  const { gw, logger } = embedded([api('Shop', '/shop', 'http://127.0.0.1:9')], {
    phases: [
      {
        after: 'route',
        phase: {
          name: 'flaky',
          run(ctx) {
            if (ctx.rest === '/sync') throw new Error('sync bug');
            if (ctx.rest === '/async') return Promise.reject(new Error('async bug'));
            return undefined;
          },
        },
      },
    ],
  });
  t.teardown(() => gw.close());
  for (const [path, why] of [
    ['/sync', 'sync bug'],
    ['/async', 'async bug'],
  ] as const) {
    const r = await gw.inject({ url: `/shop/v1${path}` });
    t.equal(r.status, 500, path);
    t.same(
      r.json(),
      { fault: { code: 103142, type: 'Status report', message: 'Custom phase failed', description: 'The custom phase "flaky" failed' } },
      'the error message stays in the log, not in the body',
    );
    t.ok(
      logger.lines.some((l) => l.event === 'custom_phase_failed' && l.phase === 'flaky' && l.message === why),
      `logged: ${why}`,
    );
  }
});

t.test('placements that cannot work are refused at creation', async (t) => {
  const p: CustomPhase = { name: 'x', run: () => undefined };
  const cases: [string, unknown[], RegExp][] = [
    ['after send', [{ after: 'send', phase: p }], /nothing runs after "send"/],
    ['unknown point', [{ before: 'auth', phase: p }], /no built-in phase "auth"/],
    ['both', [{ before: 'route', after: 'cors', phase: p }], /exactly one of before and after/],
    ['neither', [{ phase: p }], /exactly one of before and after/],
    ['built-in name', [{ before: 'route', phase: { name: 'cors', run: () => undefined } }], /name "cors" is taken/],
    [
      'twice',
      [
        { before: 'route', phase: p },
        { after: 'cors', phase: p },
      ],
      /name "x" is taken/,
    ],
    ['no run', [{ before: 'route', phase: { name: 'y' } }], /needs a name and a run\(ctx\) function/],
  ];
  for (const [name, phases, why] of cases) {
    t.throws(() => embedded([], { phases: phases as never }), { code: 'GATEWAY_PHASES', message: why }, name);
  }
});
