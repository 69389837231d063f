/**
 * Several .proto files in one publisher form, in a real browser (Debian's Chromium under playwright-core,
 * headless; docs/grpc.md, "The .proto files in the publisher"): the create form's file input takes two
 * files at once, one importing the other; a syntax error in the imported one is shown beside the input
 * with that file's name and line, an import missing from the upload names the file too, and nothing is
 * written; the two files together create the API, its services and methods are listed, it is published,
 * and a grpc-js client calls it through the node's gateway (h2c). On the API's page two more files
 * uploaded at once add their methods; 17 files and a file over 256 KiB are refused by name.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import { loadDefinition, unary } from '../grpc/helpers';
import { BROKEN_LINE, BROKEN_MESSAGES as BROKEN, MESSAGES, SERVICES, upload as file } from '../grpc/split-protos';
import { CHROMIUM, until } from './helpers';
import { grpcPublisher } from './grpc-browser';

type Any = any;

const noBrowser = fs.existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (Debian package chromium; .ci/apt-packages installs it)`;
if (noBrowser !== false) t.comment(`skipped: ${noBrowser}`);

const EXTRA_TYPES = 'syntax = "proto3";\npackage extra;\nmessage Empty {}\n';
const EXTRA = 'syntax = "proto3";\npackage extra;\nimport "extra_types.proto";\nservice Extra {\n  rpc Ping(Empty) returns (Empty);\n}\n';

t.test('two .proto files in one form, one importing the other, then a gRPC call through the gateway', { skip: noBrowser }, async (t) => {
  const set = await grpcPublisher(t, 'tw-grpc-files-');
  if (set === undefined) return;
  const { dir, backend, node, base, apis, page, errors } = set;
  const fill = async (): Promise<void> => {
    await page.getByLabel('Name', { exact: true }).fill('RouteGuide');
    await page.getByLabel('Context').fill('/routeguide');
    await page.getByLabel('API type').selectOption('GRPC');
    await page.getByLabel('Production endpoint URL', { exact: true }).fill(`http://127.0.0.1:${backend.port}`);
    await page.getByLabel('Authentication').selectOption('none');
    await page.getByLabel('Resources').fill('');
  };
  await fill();
  t.equal(await page.locator('#proto_files').getAttribute('multiple'), '', 'the file input takes several files');

  // The imported file has a syntax error: its name and line beside the input, nothing written.
  await page.locator('#proto_files').setInputFiles([file('route_guide.proto', SERVICES), file('route_messages.proto', BROKEN)]);
  await page.getByRole('button', { name: 'Save' }).click();
  t.match(
    await page.locator('#proto_files-error').innerText(),
    new RegExp(`route_messages\\.proto:${BROKEN_LINE}: `),
    'the imported file and its line beside the file input',
  );
  t.notOk(fs.existsSync(path.join(apis, 'created')), 'nothing written');

  // The importing file alone: the import is not among the files, and nothing is read from elsewhere.
  await fill();
  await page.locator('#proto_files').setInputFiles([file('route_guide.proto', SERVICES)]);
  await page.getByRole('button', { name: 'Save' }).click();
  t.match(await page.locator('#proto_files-error').innerText(), /route_messages\.proto: /, 'the missing import is named');
  t.notOk(fs.existsSync(path.join(apis, 'created')), 'nothing written');

  await fill();
  await page.locator('#proto_files').setInputFiles([file('route_guide.proto', SERVICES), file('route_messages.proto', MESSAGES)]);
  await page.getByRole('button', { name: 'Save' }).click();
  const main = await page.locator('main').innerText();
  t.match(main, /Saved routeguide-1\.0\.0\.toml \(CREATED\)/);
  t.match(
    main,
    /route_guide\.proto, route_messages\.proto: 2 services, 9 methods: routeguide\.RouteGuide \(8\), routeguide\.Admin \(1\)/,
    'the services found are listed on save',
  );
  t.equal(fs.readFileSync(path.join(apis, 'created', 'route_guide.proto'), 'utf8'), SERVICES, 'stored beside the draft, as uploaded');
  t.equal(fs.readFileSync(path.join(apis, 'created', 'route_messages.proto'), 'utf8'), MESSAGES);
  t.match(
    fs.readFileSync(path.join(apis, 'created', 'routeguide-1.0.0.toml'), 'utf8'),
    /proto = \["route_guide\.proto", "route_messages\.proto"\]/,
    'the API file names both',
  );
  const methods = async (): Promise<string[]> =>
    page
      .locator('table.grpc-methods tbody tr')
      .evaluateAll((trs) => trs.map((tr) => (tr as unknown as { innerText: string }).innerText.replace(/\s+/g, ' ').trim()));
  const shown = await methods();
  t.ok(shown.includes('/routeguide.RouteGuide/GetFeature unary served'), JSON.stringify(shown));
  t.ok(shown.includes('/routeguide.Admin/Reset unary served'));
  t.match(await page.locator('p.grpc-services').innerText(), /2 services, 9 methods/);
  t.match(await page.locator('table.proto-files').innerText(), /route_guide\.proto[\s\S]*route_messages\.proto/);

  await page.getByRole('button', { name: 'Publish' }).click();
  t.match(await page.locator('main').innerText(), /CREATED → PUBLISHED/);
  t.equal(fs.readFileSync(path.join(apis, 'route_messages.proto'), 'utf8'), MESSAGES, 'both files moved with the API file');

  const pkg = (loadDefinition(dir) as Any).routeguide;
  const client = new pkg.RouteGuide(`127.0.0.1:${node.gw}`, grpc.credentials.createInsecure());
  t.teardown(() => client.close());
  let answer = await unary(client, 'GetFeature', { latitude: 3, longitude: 4 }, new grpc.Metadata());
  t.ok(
    await until(async () => {
      answer = await unary(client, 'GetFeature', { latitude: 3, longitude: 4 }, new grpc.Metadata());
      return answer.error === null;
    }, 10_000),
    `the gateway serves the published API: ${String(answer.error?.details)}`,
  );
  t.equal(answer.value?.name, 'at 3,4', 'the backend answered the grpc-js call through the gateway');

  // Two more files at once on the API's page, one importing the other.
  await page.locator('#proto_files').setInputFiles([file('extra.proto', EXTRA), file('extra_types.proto', EXTRA_TYPES)]);
  await page.getByRole('button', { name: 'Upload .proto file' }).click();
  t.match(await page.locator('main').innerText(), /Stored extra\.proto, extra_types\.proto: 10 methods/);
  t.ok((await methods()).includes('/extra.Extra/Ping unary served'), 'the uploaded method is shown');
  t.equal(fs.readFileSync(path.join(apis, 'extra_types.proto'), 'utf8'), EXTRA_TYPES);

  // Bounds: the count of an API's files, a file's size; each refusal names what is refused.
  const many = Array.from({ length: 13 }, (_, i) => file(`m${i}.proto`, `syntax = "proto3";\npackage m${i};\n`));
  await page.locator('#proto_files').setInputFiles(many);
  await page.getByRole('button', { name: 'Upload .proto file' }).click();
  t.match(
    await page.locator('main [role="alert"]').first().innerText(),
    /API_PROTO_UPLOAD: an API names at most 16 \.proto files \(17 with these\)/,
  );
  t.notOk(fs.existsSync(path.join(apis, 'm0.proto')), 'nothing stored');
  await page.locator('#proto_files').setInputFiles([file('big.proto', `syntax = "proto3";\n${'// x\n'.repeat(60_000)}`)]);
  await page.getByRole('button', { name: 'Upload .proto file' }).click();
  t.match(await page.locator('main [role="alert"]').first().innerText(), /API_PROTO_UPLOAD: big\.proto is larger than 262144 bytes/);
  // A broken file among good ones on the page: the file and line, and none of them stored.
  await page
    .locator('#proto_files')
    .setInputFiles([
      file('ok.proto', 'syntax = "proto3";\npackage ok;\n'),
      file('bad.proto', 'syntax = "proto3";\npackage bad;\nmessage {\n'),
    ]);
  await page.getByRole('button', { name: 'Upload .proto file' }).click();
  t.match(await page.locator('main [role="alert"]').first().innerText(), /bad\.proto:3: /);
  t.notOk(fs.existsSync(path.join(apis, 'ok.proto')), 'the good file of the upload is not stored either');
  t.same(errors, [], 'no script error');
});
