/**
 * The set-up the gRPC publisher browser tests share: a route_guide.proto grpc-js backend, a node with h2c on
 * (so a grpc-js client reaches its gateway in the clear), and a Chromium page signed in as the super admin
 * and on the publisher's new-API form, with the page's script errors gathered.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import { startTestNode } from '../observability/node-helpers';
import { grpcBackend, PROTO } from '../grpc/helpers';
import { ADMIN, launchChromium, PORTAL_TOML } from './helpers';

export interface GrpcPublisher {
  /** The folder holding the backend's route_guide.proto (loadDefinition reads it for a client). */
  readonly dir: string;
  readonly backend: Awaited<ReturnType<typeof grpcBackend>>;
  readonly node: Awaited<ReturnType<typeof startTestNode>>;
  /** The node's management base URL (the consoles). */
  readonly base: string;
  /** The node's apis folder. */
  readonly apis: string;
  readonly page: Page;
  /** Script errors the page raised (a test ends by asserting none). */
  readonly errors: string[];
}

/** Undefined when Chromium cannot start (launchChromium has said why). */
export async function grpcPublisher(
  t: { comment(m: string): void; teardown(f: () => unknown): void },
  prefix: string,
): Promise<GrpcPublisher | undefined> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, 'route_guide.proto'), PROTO);
  const backend = await grpcBackend(dir);
  t.teardown(() => backend.close());
  const node = await startTestNode(`${PORTAL_TOML}[throughway.http2]\nh2c = true\n`);
  t.teardown(() => node.close());
  const base = `http://127.0.0.1:${node.mgmt}`;
  const browser = await launchChromium(t);
  if (browser === undefined) return undefined;
  const page = await (await browser.newContext()).newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${base}/devportal/login?back=%2Fpublisher`);
  await page.getByLabel('Username').fill(ADMIN.username);
  await page.getByLabel('Password').fill(ADMIN.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.goto(`${base}/publisher/new`);
  return { dir, backend, node, base, apis: path.join(node.dir, 'apis'), page, errors };
}
