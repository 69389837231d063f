/**
 * The publisher's multipart .proto forms over HTTP (docs/grpc.md, "The .proto files in the publisher";
 * lib/portal/index.ts, multipart.ts): two files posted in one multipart/form-data form create a gRPC API;
 * the CSRF token is read from the multipart body (403 without it); multipart is taken by the .proto forms
 * only (415 elsewhere); the 1 MiB body bound answers 413; a file that is not UTF-8 text, a name with a
 * directory and the same name twice are refused by name, and nothing is written.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { startTestNode } from '../observability/node-helpers';
import { MESSAGES, SERVICES } from '../grpc/split-protos';
import { hidden, PORTAL_TOML, req, signIn } from './helpers';

t.test('multipart .proto forms', async (t) => {
  const node = await startTestNode(PORTAL_TOML);
  t.teardown(() => node.close());
  const base = `http://127.0.0.1:${node.mgmt}`;
  const cookie = await signIn(base);
  const csrf = hidden((await req(`${base}/publisher/new`, cookie)).text, 'csrf');
  t.not(csrf, '');
  const post = async (
    to: string,
    files: readonly [string, string | Buffer][],
    fields: Record<string, string> = {},
  ): Promise<{ status: number; location: string; text: string }> => {
    const form = new FormData();
    for (const [k, v] of Object.entries({
      csrf,
      action: 'save',
      name: 'RouteGuide',
      context: '/routeguide',
      version: '1',
      type: 'GRPC',
      production: 'http://127.0.0.1:9',
      auth: 'none',
      ...fields,
    }))
      form.append(k, v);
    for (const [name, text] of files) form.append('proto_files', new Blob([text]), name);
    const r = await fetch(`${base}${to}`, { method: 'POST', body: form, redirect: 'manual', headers: { Cookie: cookie } });
    return { status: r.status, location: r.headers.get('location') ?? '', text: await r.text() };
  };
  const created = path.join(node.dir, 'apis', 'created');
  const fieldError = (html: string): string => /id="proto_files-error"[^>]*>([^<]*)</.exec(html)?.[1] ?? '';

  t.equal((await post('/publisher/new', [['a.proto', SERVICES]], { csrf: '' })).status, 403, 'no CSRF token in the multipart body: 403');
  t.equal((await post('/publisher/apis/x.toml/lifecycle', [])).status, 415, 'multipart is for the .proto forms only');
  const big = await post('/publisher/new', [['big.proto', Buffer.alloc(1024 * 1024 + 1, 0x20)]]);
  t.equal(big.status, 413, 'past the 1 MiB body');
  t.match(big.text, /1048576/);

  const latin1 = await post('/publisher/new', [
    ['route_guide.proto', SERVICES],
    ['route_messages.proto', Buffer.from([0x2f, 0x2f, 0xe9, 0x0a])],
  ]);
  t.equal(latin1.status, 400);
  t.equal(fieldError(latin1.text), 'API_PROTO_UPLOAD: route_messages.proto is not UTF-8 text', 'a file that is not UTF-8 is named');
  const up = await post('/publisher/new', [['../route_guide.proto', SERVICES]]);
  t.match(
    fieldError(up.text),
    /API_PROTO_UPLOAD: &#34;\.\.\/route_guide\.proto&#34; is not a \.proto file name/,
    'a name with a directory',
  );
  const twice = await post('/publisher/new', [
    ['a.proto', MESSAGES],
    ['a.proto', MESSAGES],
  ]);
  t.equal(fieldError(twice.text), 'API_PROTO_UPLOAD: a.proto is given twice');
  t.notOk(fs.existsSync(created), 'nothing written');

  const ok = await post('/publisher/new', [
    ['route_guide.proto', SERVICES],
    ['route_messages.proto', MESSAGES],
  ]);
  t.equal(ok.status, 303, 'two files, one importing the other: created');
  t.equal(ok.location, '/publisher/apis/created%3Arouteguide-1.toml');
  t.equal(fs.readFileSync(path.join(created, 'route_messages.proto'), 'utf8'), MESSAGES);
  t.match(fs.readFileSync(path.join(created, 'routeguide-1.toml'), 'utf8'), /proto = \["route_guide\.proto", "route_messages\.proto"\]/);
});
