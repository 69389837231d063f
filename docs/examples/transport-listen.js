// A bare pass-through proxy on its own port: every request goes to one backend.
const http = require('node:http');
const { createTransport, targetFromUrl } = require('throughway');

async function main() {
  const backend = http.createServer((req, res) => res.end(`backend saw ${req.method} ${req.url}\n`));
  await new Promise((resolve) => backend.listen(0, '127.0.0.1', resolve));

  // Parse endpoints once; the router runs per request and must stay cheap.
  const target = targetFromUrl(`http://127.0.0.1:${backend.address().port}`);
  const proxy = createTransport({ route: () => ({ target }) });
  const { port } = await proxy.listen({ port: 0, host: '127.0.0.1' });

  const body = await (await fetch(`http://127.0.0.1:${port}/hello?x=1`)).text();
  console.log(body.trim()); // backend saw GET /hello?x=1

  await proxy.close();
  backend.close();
}

main();
