// Mount the gateway in a node:http app (Express and Fastify alike): the app answers its own paths and
// hands the rest to gateway.handler; upgrade requests (WebSocket) go to gateway.handleUpgrade.
const http = require('node:http');
const { createGateway, loadConfig } = require('throughway');

async function main() {
  const backend = http.createServer((req, res) => res.end(`orders backend: ${req.url}\n`));
  await new Promise((resolve) => backend.listen(0, '127.0.0.1', resolve));
  const gateway = createGateway({
    loaded: loadConfig({ text: '' }),
    apis: [
      {
        name: 'Orders',
        context: '/orders',
        version: 'v2',
        auth: 'none',
        endpoints: { production: `http://127.0.0.1:${backend.address().port}` },
        resources: [{ path: '/*', methods: ['GET', 'POST'] }],
      },
    ],
  });

  const app = http.createServer((req, res) => {
    if (req.url === '/healthz') return res.end('app ok\n');
    gateway.handler(req, res); // Express: app.use(gateway.handler) before any body parser
  });
  app.on('upgrade', gateway.handleUpgrade);
  await new Promise((resolve) => app.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${app.address().port}`;

  console.log((await (await fetch(`${base}/healthz`)).text()).trim()); // app ok
  console.log((await (await fetch(`${base}/orders/v2/list?page=2`)).text()).trim()); // orders backend: /list?page=2
  const posted = await fetch(`${base}/orders/v2/new`, { method: 'POST', body: 'x'.repeat(100000) });
  console.log(posted.status); // 200

  // A WebSocket handshake: this transport does not tunnel upgrades yet, so fault 103140 (501).
  const upgrade = await new Promise((resolve) => {
    const req = http.request(`${base}/orders/v2/live`, { headers: { Connection: 'Upgrade', Upgrade: 'websocket' } });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve(`${res.statusCode} ${JSON.parse(body).fault.code}`));
    });
    req.end();
  });
  console.log(upgrade); // 501 103140

  app.close();
  await gateway.close();
  backend.close();
}

main();
