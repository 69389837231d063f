/**
 * The node (lib/node.ts): start-up lines say where spans and events go, and close() — what SIGTERM and
 * SIGINT run — flushes both after the in-flight calls finished.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { loadConfig } from '../../lib/config/load';
import { startNode } from '../../lib/node';
import { apiToml, confDir, echoBackend, request } from '../gateway/helpers';
import { collector, items } from './helpers';
import type { Span } from '../../lib/observability/tracing';
import type { AnalyticsEvent } from '../../lib/observability/analytics';

t.test('start-up lines, and close flushes spans and events', async (t) => {
  const zipkin = await collector();
  const rcv = await collector(200);
  const backend = await echoBackend();
  const toml = `[server]\nhostname = "localhost"\n[super_admin]\nusername = "admin"\npassword = "admin"\n[database.apim_db]\ntype = "h2"\nurl = "jdbc:h2:mem:obs"\nusername = "u"\npassword = "p"\n[transport.passthru_http.listener.parameters]\nport = 0\n[transport.http.properties]\nport = 0\n[apim.open_tracer]\nremote_tracer.enable = true\nremote_tracer.properties.hostname = "127.0.0.1"\nremote_tracer.properties.port = ${zipkin.port}\n[apim.analytics]\nenable = true\n[[apim.analytics.url_group]]\nanalytics_url = ["${rcv.url}"]\n[throughway]\nlog_level = "error"\n[throughway.tracing]\nflush_interval = "60s"\n[throughway.analytics]\nflush_interval = "60s"\n`;
  const dir = confDir(toml, { a: apiToml({ endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/r', ['GET']]] }) });
  t.teardown(async () => {
    fs.rmSync(dir, { recursive: true, force: true });
    await backend.close();
    await rcv.close();
    await zipkin.close();
  });
  const loaded = loadConfig({ file: path.join(dir, 'deployment.toml') });
  t.ok(loaded.ok, JSON.stringify(loaded.diagnostics.filter((d) => d.level === 'error')));
  const lines: string[] = [];
  const node = await startNode(loaded, { log: (l) => lines.push(l) });
  const port = Number(/gateway HTTP\s+port (\d+)/.exec(lines.join('\n'))?.[1]);
  t.ok(port > 0, 'the gateway port is printed');
  t.ok(
    lines.some((l) => /^ {2}tracing\s+Zipkin http:\/\/127\.0\.0\.1:\d+\/api\/v2\/spans$/.test(l)),
    lines.join('\n'),
  );
  t.ok(lines.some((l) => /^ {2}analytics\s+1 HTTP receiver\(s\) \(failover\)$/.test(l)));
  t.equal((await request(port, '/test/1.0.0/r')).status, 200);
  t.equal(zipkin.posts.length + rcv.posts.length, 0, 'nothing sent before the interval');
  await node.close();
  t.equal(items<Span>(zipkin).length, 10, 'spans flushed on close');
  t.match(items<AnalyticsEvent>(rcv), [{ apiName: 'Test', proxyResponseCode: 200 }], 'the event flushed on close');
});
