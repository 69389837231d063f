/**
 * A gRPC API created in the publisher in a real browser (Debian's Chromium under playwright-core, headless;
 * docs/grpc.md, "The .proto files in the publisher"): the admin signs in, creates a gRPC API with its .proto
 * file in the form (a syntax error first: shown beside the field with the file and line, nothing written),
 * sees its methods on the API's page, publishes it, and a grpc-js client calls a method through the node's
 * gateway (h2c) to a real grpc-js backend; a second .proto file uploaded on the page adds its methods.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import { loadDefinition, PROTO, unary } from '../grpc/helpers';
import { CHROMIUM, until } from './helpers';
import { grpcPublisher } from './grpc-browser';

type Any = any;

const noBrowser = fs.existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (Debian package chromium; .ci/apt-packages installs it)`;
if (noBrowser !== false) t.comment(`skipped: ${noBrowser}`);

const EXTRA = 'syntax = "proto3";\npackage extra;\nservice Extra {\n  rpc Ping(Empty) returns (Empty);\n}\nmessage Empty {}\n';

t.test('the publisher takes a .proto file, shows its methods, and the gateway serves them', { skip: noBrowser }, async (t) => {
  const set = await grpcPublisher(t, 'tw-grpc-pub-');
  if (set === undefined) return;
  const { dir, backend, node, base, apis, page, errors } = set;
  await page.getByLabel('Name', { exact: true }).fill('RouteGuide');
  await page.getByLabel('Context').fill('/routeguide');
  await page.getByLabel('API type').selectOption('GRPC');
  await page.getByLabel('Production endpoint URL', { exact: true }).fill(`http://127.0.0.1:${backend.port}`);
  await page.getByLabel('Authentication').selectOption('none');
  await page.getByLabel('Resources').fill('');
  await page.getByLabel('.proto file name').fill('route_guide.proto');
  // A syntax error first: the file and its line beside the field, nothing written.
  await page
    .getByLabel('.proto file', { exact: true })
    .fill(PROTO.replace('rpc Slow(Point) returns (Feature) {}', 'rpc Slow(Point) returns (Feature) {'));
  await page.getByRole('button', { name: 'Save' }).click();
  t.match(await page.locator('#proto_name-error').innerText(), /route_guide\.proto:\d+: /, 'the .proto file and line beside the field');
  t.notOk(fs.existsSync(path.join(apis, 'created')), 'nothing written');

  await page.getByLabel('.proto file', { exact: true }).fill(PROTO);
  await page.getByRole('button', { name: 'Save' }).click();
  t.match(await page.locator('main').innerText(), /Saved routeguide-1\.0\.0\.toml \(CREATED\)/);
  t.equal(fs.readFileSync(path.join(apis, 'created', 'route_guide.proto'), 'utf8'), PROTO, 'stored beside the draft');
  const methods = async (): Promise<string[]> =>
    page
      .locator('table.grpc-methods tbody tr')
      .evaluateAll((trs) => trs.map((tr) => (tr as unknown as { innerText: string }).innerText.replace(/\s+/g, ' ').trim()));
  const shown = await methods();
  t.ok(shown.includes('/routeguide.RouteGuide/GetFeature unary served'), JSON.stringify(shown));
  t.ok(shown.includes('/routeguide.RouteGuide/ListFeatures server streaming served'));
  t.match(await page.locator('table.proto-files').innerText(), /route_guide\.proto/);

  await page.getByRole('button', { name: 'Publish' }).click();
  t.match(await page.locator('main').innerText(), /CREATED → PUBLISHED/);
  t.equal(fs.readFileSync(path.join(apis, 'route_guide.proto'), 'utf8'), PROTO, 'the .proto file moved with the API file');

  const pkg = (loadDefinition(dir) as Any).routeguide;
  const client = new pkg.RouteGuide(`127.0.0.1:${node.gw}`, grpc.credentials.createInsecure());
  t.teardown(() => client.close());
  let answer = await unary(client, 'GetFeature', { latitude: 7, longitude: 8 }, new grpc.Metadata());
  t.ok(
    await until(async () => {
      answer = await unary(client, 'GetFeature', { latitude: 7, longitude: 8 }, new grpc.Metadata());
      return answer.error === null;
    }, 10_000),
    `the gateway serves the published API: ${String(answer.error?.details)}`,
  );
  t.equal(answer.value?.name, 'at 7,8', 'the backend answered the grpc-js call through the gateway');

  // A second .proto file uploaded on the API's page: its method is listed.
  await page.getByLabel('.proto file name').fill('extra.proto');
  await page.getByLabel('.proto file', { exact: true }).fill(EXTRA);
  await page.getByRole('button', { name: 'Upload .proto file' }).click();
  t.match(await page.locator('main').innerText(), /Stored extra\.proto: 10 methods/);
  t.ok((await methods()).includes('/extra.Extra/Ping unary served'), 'the uploaded method is shown');
  t.equal(fs.readFileSync(path.join(apis, 'extra.proto'), 'utf8'), EXTRA);
  await page.getByRole('button', { name: 'Delete extra.proto' }).click();
  t.match(await page.locator('main').innerText(), /Deleted extra\.proto: 9 methods/);
  t.notOk(fs.existsSync(path.join(apis, 'extra.proto')));
  t.same(errors, [], 'no script error');
});
