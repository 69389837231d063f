// Custom phases at named points of the chain: a key check after authentication that faults with a code
// of its own, a local answer, and a field for the backend added before the outgoing fields are built.
const http = require('node:http');
const { createGateway, loadConfig, customFault, localAnswer } = require('throughway');

async function main() {
  const backend = http.createServer((req, res) => res.end(`tenant=${req.headers['x-tenant']}\n`));
  await new Promise((resolve) => backend.listen(0, '127.0.0.1', resolve));
  const keys = new Map([['k-123', 'acme']]);

  const gateway = createGateway({
    loaded: loadConfig({ text: '' }),
    apis: [
      {
        name: 'Reports',
        context: '/reports',
        version: 'v1',
        auth: 'none',
        endpoints: { production: `http://127.0.0.1:${backend.address().port}` },
        resources: [{ path: '/*', methods: ['GET'] }],
      },
    ],
    phases: [
      {
        after: 'authentication',
        phase: {
          name: 'api-key',
          run(ctx) {
            if (ctx.rest === '/ping') return localAnswer(200, ['Content-Type', 'text/plain'], 'pong\n');
            const key = ctx.req.headers.findIndex((v, i) => i % 2 === 0 && v.toLowerCase() === 'x-api-key');
            const tenant = key < 0 ? undefined : keys.get(ctx.req.headers[key + 1]);
            if (tenant === undefined) return { fault: customFault({ code: 990001, status: 401, message: 'Unknown API key' }) };
            ctx.locals = { tenant }; // per-call data for later phases
            return undefined; // continue the chain
          },
        },
      },
      {
        before: 'transport-headers',
        phase: { name: 'tenant-field', run: (ctx) => void (ctx.addRequestHeaders = ['X-Tenant', ctx.locals.tenant]) },
      },
    ],
  });

  const ping = await gateway.inject({ url: '/reports/v1/ping' });
  console.log(ping.status, ping.body.trim()); // 200 pong
  const denied = await gateway.inject({ url: '/reports/v1/daily' });
  console.log(denied.status, denied.json().fault.code, denied.json().fault.message); // 401 990001 Unknown API key
  const allowed = await gateway.inject({ url: '/reports/v1/daily', headers: { 'X-Api-Key': 'k-123' } });
  console.log(allowed.status, allowed.body.trim()); // 200 tenant=acme

  await gateway.close();
  backend.close();
}

main();
