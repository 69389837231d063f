/**
 * The .proto files of a remote publisher (an api-publisher node whose control plane is another node,
 * lib/portal/remote-catalogue.ts; docs/grpc.md, "The .proto files in the publisher"), in a real browser
 * (Debian's Chromium under playwright-core, headless): the create form takes two .proto files at once, one
 * importing the other, and the control plane stores them beside its draft; the API's page shows the
 * .proto section read through the control plane's admin API (files, services, methods); a broken upload
 * names its file and line and stores nothing; two more files are uploaded and one deleted there; the API
 * is published and a grpc-js client calls it through the control plane's gateway.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import { startTestNode } from '../observability/node-helpers';
import { grpcBackend, loadDefinition, PROTO, unary } from '../grpc/helpers';
import { MESSAGES, SERVICES, upload as file } from '../grpc/split-protos';
import { ADMIN, CHROMIUM, launchChromium, PORTAL_TOML, until } from './helpers';

type Any = any;

const noBrowser = fs.existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (Debian package chromium; .ci/apt-packages installs it)`;
if (noBrowser !== false) t.comment(`skipped: ${noBrowser}`);

const publisherToml = (km: string): string =>
  `[server]\nhostname = "localhost"\nserver_role = "api-publisher"\n[super_admin]\nusername = "admin"\npassword = "${ADMIN.password}"\n[apim.key_manager]\nservice_url = "${km}/services/"\nusername = "admin"\npassword = "${ADMIN.password}"\n`;

const EXTRA_TYPES = 'syntax = "proto3";\npackage extra;\nmessage Empty {}\n';
const EXTRA = 'syntax = "proto3";\npackage extra;\nimport "extra_types.proto";\nservice Extra {\n  rpc Ping(Empty) returns (Empty);\n}\n';

t.test("a remote publisher's .proto files go through the control plane's admin API", { skip: noBrowser }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-grpc-remote-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, 'route_guide.proto'), PROTO);
  const backend = await grpcBackend(dir);
  t.teardown(() => backend.close());
  const cp = await startTestNode(`${PORTAL_TOML}[throughway.http2]\nh2c = true\n`);
  t.teardown(() => cp.close());
  const pub = await startTestNode(publisherToml(`http://127.0.0.1:${cp.mgmt}`));
  t.teardown(() => pub.close());
  const apis = path.join(cp.dir, 'apis');
  const base = `http://127.0.0.1:${pub.mgmt}`;
  const browser = await launchChromium(t);
  if (browser === undefined) return;
  const page = await (await browser.newContext()).newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));

  // Sign-in through the control plane's key manager page.
  await page.goto(`${base}/devportal/login?back=%2Fpublisher`);
  await page.getByLabel('Username').fill(ADMIN.username);
  await page.getByLabel('Password').fill(ADMIN.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${base}/publisher`);
  await page.goto(`${base}/publisher/new`);
  await page.getByLabel('Name', { exact: true }).fill('RouteGuide');
  await page.getByLabel('Context').fill('/routeguide');
  await page.getByLabel('API type').selectOption('GRPC');
  await page.getByLabel('Production endpoint URL', { exact: true }).fill(`http://127.0.0.1:${backend.port}`);
  await page.getByLabel('Authentication').selectOption('none');
  await page.getByLabel('Resources').fill('');
  await page.locator('#proto_files').setInputFiles([file('route_guide.proto', SERVICES), file('route_messages.proto', MESSAGES)]);
  await page.getByRole('button', { name: 'Save' }).click();
  t.match(await page.locator('main').innerText(), /Saved routeguide-1\.0\.0\.toml \(CREATED\)\..*2 services, 9 methods/);
  t.equal(fs.readFileSync(path.join(apis, 'created', 'route_guide.proto'), 'utf8'), SERVICES, "stored beside the control plane's draft");
  t.equal(fs.readFileSync(path.join(apis, 'created', 'route_messages.proto'), 'utf8'), MESSAGES);

  // The .proto section, read from the control plane.
  const methods = async (): Promise<string[]> =>
    page
      .locator('table.grpc-methods tbody tr')
      .evaluateAll((trs) => trs.map((tr) => (tr as unknown as { innerText: string }).innerText.replace(/\s+/g, ' ').trim()));
  t.match(await page.locator('table.proto-files').innerText(), /route_guide\.proto[\s\S]*route_messages\.proto/, 'the files listed');
  t.ok((await methods()).includes('/routeguide.RouteGuide/ListFeatures server streaming served'), 'and their methods');
  t.match(await page.locator('p.grpc-services').innerText(), /routeguide\.RouteGuide \(8\), routeguide\.Admin \(1\)/);

  // A broken file: the control plane's refusal names it with its line; nothing stored.
  await page.locator('#proto_files').setInputFiles([file('bad.proto', 'syntax = "proto3";\npackage bad;\nservice {\n')]);
  await page.getByRole('button', { name: 'Upload .proto file' }).click();
  t.match(await page.locator('main [role="alert"]').first().innerText(), /bad\.proto: not stored: .*bad\.proto:3: /);
  t.notOk(fs.existsSync(path.join(apis, 'created', 'bad.proto')), 'nothing stored');

  // Two files at once, then one deleted.
  await page.locator('#proto_files').setInputFiles([file('extra.proto', EXTRA), file('extra_types.proto', EXTRA_TYPES)]);
  await page.getByRole('button', { name: 'Upload .proto file' }).click();
  t.match(await page.locator('main').innerText(), /Stored extra\.proto, extra_types\.proto: 10 methods/);
  t.ok((await methods()).includes('/extra.Extra/Ping unary served'));
  t.equal(fs.readFileSync(path.join(apis, 'created', 'extra.proto'), 'utf8'), EXTRA, 'on the control plane');
  // extra_types.proto is still imported by extra.proto: its deletion does not validate.
  await page.getByRole('button', { name: 'Delete extra_types.proto' }).click();
  t.match(await page.locator('main [role="alert"]').first().innerText(), /extra_types\.proto: not stored: /);
  await page.getByRole('button', { name: 'Delete extra.proto' }).click();
  t.match(await page.locator('main').innerText(), /Deleted extra\.proto: 9 methods/);
  t.notOk(fs.existsSync(path.join(apis, 'created', 'extra.proto')), 'deleted on the control plane');

  await page.getByRole('button', { name: 'Publish' }).click();
  t.match(await page.locator('main').innerText(), /CREATED → PUBLISHED/);
  t.equal(fs.readFileSync(path.join(apis, 'route_messages.proto'), 'utf8'), MESSAGES, 'the files moved with the API file');
  const pkg = (loadDefinition(dir) as Any).routeguide;
  const client = new pkg.RouteGuide(`127.0.0.1:${cp.gw}`, grpc.credentials.createInsecure());
  t.teardown(() => client.close());
  let answer = await unary(client, 'GetFeature', { latitude: 5, longitude: 6 }, new grpc.Metadata());
  t.ok(
    await until(async () => {
      answer = await unary(client, 'GetFeature', { latitude: 5, longitude: 6 }, new grpc.Metadata());
      return answer.error === null;
    }, 10_000),
    `the control plane's gateway serves it: ${String(answer.error?.details)}`,
  );
  t.equal(answer.value?.name, 'at 5,6');
  t.same(errors, [], 'no script error');
});
