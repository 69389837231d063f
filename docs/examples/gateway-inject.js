// A gateway with its APIs given in code, exercised without a client socket: inject() runs the whole
// chain (parser, phases, faults) and the real backend. Events report faults and finished exchanges.
const http = require('node:http');
const { createGateway, loadConfig } = require('throughway');

async function main() {
  const backend = http.createServer((req, res) => res.end(`pets backend: ${req.method} ${req.url}\n`));
  await new Promise((resolve) => backend.listen(0, '127.0.0.1', resolve));

  const gateway = createGateway({
    loaded: loadConfig({ text: '' }), // the defaults; or loadConfig({ file: 'conf/deployment.toml' })
    apis: [
      {
        name: 'Pets',
        context: '/pets',
        version: 'v1',
        auth: 'none',
        endpoints: { production: `http://127.0.0.1:${backend.address().port}/api` },
        resources: [{ path: '/pets/{id}', methods: ['GET'] }],
      },
    ],
  });
  const faults = [];
  const statuses = [];
  gateway.on('fault', (f) => faults.push(`${f.code} ${f.source}`));
  gateway.on('request', (r) => statuses.push(r.status));

  const ok = await gateway.inject({ url: '/pets/v1/pets/7' });
  console.log(ok.status, ok.body.trim()); // 200 pets backend: GET /api/pets/7
  const wrong = await gateway.inject({ method: 'DELETE', url: '/pets/v1/pets/7' });
  console.log(wrong.status, wrong.json().fault.code, wrong.headers.allow); // 405 103006 GET, HEAD

  console.log(faults.join(', ')); // 103006 gateway
  console.log(statuses.join(', ')); // 200, 405

  await gateway.close();
  backend.close();
}

main();
