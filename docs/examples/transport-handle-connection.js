// Mount the proxy inside a server you already run: hand it the sockets of your own net.Server.
// Paths under /api go to the backend; anything else gets a local answer; no route gives fault 103003.
const net = require('node:net');
const http = require('node:http');
const { createTransport, targetFromUrl } = require('throughway');

async function main() {
  const backend = http.createServer((req, res) => res.end(`backend: ${req.url}\n`));
  await new Promise((resolve) => backend.listen(0, '127.0.0.1', resolve));
  const api = targetFromUrl(`http://127.0.0.1:${backend.address().port}`);

  const proxy = createTransport({
    route(req) {
      if (req.url.startsWith('/api/')) return { target: api, path: req.url.slice(4) };
      if (req.url === '/ping') return { status: 200, headers: ['Content-Type', 'text/plain'], body: 'pong\n' };
      return undefined; // 404 with the spec's JSON fault body
    },
  });
  // allowHalfOpen: a client that half-closes after its request still gets its response.
  const server = net.createServer({ allowHalfOpen: true }, (socket) => proxy.handleConnection(socket));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${server.address().port}`;

  console.log((await (await fetch(`${base}/api/users/7`)).text()).trim()); // backend: /users/7
  console.log((await (await fetch(`${base}/ping`)).text()).trim()); // pong
  const missing = await fetch(`${base}/nowhere`);
  console.log(missing.status, (await missing.json()).fault.code); // 404 103003

  server.close();
  await proxy.close();
  backend.close();
}

main();
