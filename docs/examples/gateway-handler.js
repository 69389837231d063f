// Mount the gateway in a node:http app (Express and Fastify alike): the app answers its own paths and
// hands the rest to gateway.handler; upgrade requests (WebSocket) go to gateway.handleUpgrade.
const http = require('node:http');
const { WebSocket, WebSocketServer } = require('ws'); // only for the WebSocket part (npm i ws)
const { createGateway, loadConfig } = require('throughway');

async function main() {
  const backend = http.createServer((req, res) => res.end(`orders backend: ${req.url}\n`));
  await new Promise((resolve) => backend.listen(0, '127.0.0.1', resolve));
  const chat = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  chat.on('connection', (ws, req) => ws.on('message', (m) => ws.send(`chat backend ${req.url}: ${m}`)));
  await new Promise((resolve) => chat.once('listening', resolve));
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
      {
        name: 'Chat',
        context: '/chat',
        version: 'v1',
        type: 'WS',
        auth: 'none',
        endpoints: { production: `ws://127.0.0.1:${chat.address().port}` },
        resources: [{ path: '/*', methods: ['GET'] }],
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

  // A WebSocket API: handleUpgrade hands the socket to the gateway, which tunnels it to the backend.
  const ws = new WebSocket(`ws://127.0.0.1:${app.address().port}/chat/v1/room`);
  const reply = await new Promise((resolve, reject) => {
    ws.on('open', () => ws.send('hello'));
    ws.on('message', (m) => resolve(String(m)));
    ws.on('error', reject);
  });
  console.log(reply); // chat backend /room: hello
  ws.close();

  app.close();
  await gateway.close();
  backend.close();
  chat.close();
}

main();
