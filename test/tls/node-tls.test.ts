/**
 * A whole node with TLS: the sample key pair is generated on first start under var/security of the
 * working directory, the gateway answers HTTPS on 8243 + offset and WSS on 8099 + offset, the key
 * manager HTTPS on 9443 + offset (plain 9763 still works); a broken JKS listener key store stops the
 * start with a coded error naming the key and the file.
 */
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { WebSocket, WebSocketServer } from 'ws';
import { loadConfig } from '../../lib/config/load';
import { startNode } from '../../lib/node';

const HOST = '127.0.0.1';
// Below the ephemeral range (test/ports.ts says why): ports 27099..31764.
const offset = 19000 + (process.pid % 3000);
const BASE = `[server]\nhostname = "localhost"\noffset = ${offset}\n[super_admin]\nusername = "admin"\npassword = "admin"\n[database.apim_db]\ntype = "h2"\nusername = "u"\npassword = "p"\n`;

function get(port: number, p: string, ca: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    https
      .get({ host: HOST, port, path: p, ca, servername: 'localhost', checkServerIdentity: () => undefined }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

t.test('node: sample key pair, HTTPS gateway, WSS, management HTTPS', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-node-tls-'));
  const before = process.cwd();
  process.chdir(dir);
  t.teardown(() => {
    process.chdir(before);
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const wss = new WebSocketServer({ host: HOST, port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  wss.on('connection', (ws) => ws.on('message', (d) => ws.send(`echo ${d.toString()}`)));
  t.teardown(() => new Promise<void>((resolve) => wss.close(() => resolve())));
  const wsPort = (wss.address() as net.AddressInfo).port;
  fs.mkdirSync(path.join(dir, 'conf', 'apis'), { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'conf', 'apis', 'chat.toml'),
    `name = "Chat"\ncontext = "/chat"\nversion = "1"\ntype = "WS"\nauth = "none"\n[endpoints]\nproduction = "ws://${HOST}:${wsPort}"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`,
  );
  fs.writeFileSync(
    path.join(dir, 'conf', 'apis', 'echo.toml'),
    `name = "Echo"\ncontext = "/echo"\nversion = "1"\nauth = "none"\n[endpoints]\nproduction = "http://${HOST}:${9000 + offset}"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`,
  );
  fs.writeFileSync(
    path.join(dir, 'conf', 'deployment.toml'),
    BASE +
      `[transport.ws]\nsender.enable = true\n[transport.wss]\nsender.enable = true\nsender.trust_store.location = "../var/security/throughway-sample.pem"\nsender.trust_store.password = "unused"\n[throughway.demo]\nenable = true\nport = 9000\n`,
  );
  const loaded = loadConfig({ file: path.join(dir, 'conf', 'deployment.toml') });
  t.ok(loaded.ok, JSON.stringify(loaded.diagnostics.filter((d) => d.level === 'error')));
  const lines: string[] = [];
  const node = await startNode(loaded, { log: (l) => lines.push(l) });
  t.teardown(() => node.close());
  const sample = path.join(dir, 'var', 'security', 'throughway-sample.pem');
  t.ok(fs.existsSync(sample), 'the sample key pair is under var/security of the working directory');
  t.match(lines.join('\n'), /generated the sample key pair/);
  t.match(lines.join('\n'), new RegExp(`gateway HTTPS\\s+port ${8243 + offset}`));
  t.match(lines.join('\n'), new RegExp(`management HTTPS\\s+port ${9443 + offset}`));
  t.match(lines.join('\n'), new RegExp(`gateway WSS\\s+port ${8099 + offset}`));
  t.notMatch(lines.join('\n'), /gateway HTTPS.*not opened yet/);
  const ca = fs.readFileSync(sample, 'utf8');

  const r = await get(8243 + offset, '/echo/1/menu', ca);
  t.equal(r.status, 200, 'HTTPS through the gateway to the demo backend');
  const jwks = await get(9443 + offset, '/oauth2/jwks', ca);
  t.equal(jwks.status, 200, 'the key manager over HTTPS');
  t.match(jwks.body, /"keys"/);

  const ws = new WebSocket(`wss://localhost:${8099 + offset}/chat/1/room`, { ca });
  t.teardown(() => ws.terminate());
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const reply = new Promise<string>((resolve) => ws.once('message', (d) => resolve(d.toString())));
  ws.send('over wss');
  t.equal(await reply, 'echo over wss', 'a WebSocket API over WSS');

  const plain = new WebSocket(`ws://${HOST}:${9099 + offset}/chat/1/room`);
  t.teardown(() => plain.terminate());
  await new Promise<void>((resolve, reject) => {
    plain.once('open', () => resolve());
    plain.once('error', reject);
  });
  const reply2 = new Promise<string>((resolve) => plain.once('message', (d) => resolve(d.toString())));
  plain.send('over ws');
  t.equal(await reply2, 'echo over ws', 'and over WS on 9099 + offset');
});

t.test('node: a broken JKS listener key store stops the start with a coded error naming the key and the file', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-node-jks-'));
  const before = process.cwd();
  process.chdir(dir);
  t.teardown(() => {
    process.chdir(before);
    fs.rmSync(dir, { recursive: true, force: true });
  });
  fs.mkdirSync(path.join(dir, 'conf'));
  fs.writeFileSync(path.join(dir, 'conf', 'wso2carbon.jks'), Buffer.from([0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2, 0, 0, 0, 0]));
  const stores = ['listener', 'sender']
    .map(
      (s) =>
        `${s}.key_store.file_name = "wso2carbon.jks"\n${s}.key_store.password = "wso2carbon"\n${s}.key_store.key_password = "wso2carbon"\n${s}.trust_store.file_name = "wso2carbon.jks"\n${s}.trust_store.password = "wso2carbon"\n`,
    )
    .join('');
  fs.writeFileSync(
    path.join(dir, 'conf', 'deployment.toml'),
    BASE.replace(`offset = ${offset}`, `offset = ${offset + 1}`) + `[transport.passthru_https]\n${stores}`,
  );
  const loaded = loadConfig({ file: path.join(dir, 'conf', 'deployment.toml') });
  t.ok(loaded.ok);
  await t.rejects(startNode(loaded, { log: () => undefined }), {
    code: 'TLS_FORMAT',
    message: /listener\.key_store .*wso2carbon\.jks: shorter than a header and a digest/,
  });
});
