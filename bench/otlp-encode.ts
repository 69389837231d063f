/**
 * `node dist/bench/otlp-encode.js [ROUNDS]`: the cost of one tracing batch's encoding (docs/tracing.md,
 * "OTLP"), off the request path: 100 spans as 10 calls' worth (a SERVER span with the usual tags, 9
 * phase spans) encoded as Zipkin v2 JSON, OTLP/JSON and OTLP protobuf, ROUNDS times each after a warm-up;
 * prints the bytes and the milliseconds per batch (median of 5 runs). Writes nothing to docs/.
 */
import { otlpJson, otlpProtobuf } from '../lib/observability/otlp';
import type { Span } from '../lib/observability/tracing';

const span = (i: number): Span => ({
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
  id: i.toString(16).padStart(16, '0'),
  parentId: '00f067aa0ba902b7',
  name: i % 10 === 0 ? 'GET /pizzashack/1.0.0/menu' : 'route',
  ...(i % 10 === 0 ? { kind: 'SERVER' as const, remoteEndpoint: { ipv4: '127.0.0.1' } } : {}),
  timestamp: 1764000000123456 + i,
  duration: 12,
  localEndpoint: { serviceName: 'throughway' },
  tags:
    i % 10 === 0
      ? {
          'http.method': 'GET',
          'http.path': '/pizzashack/1.0.0/menu',
          'http.status_code': '200',
          'throughway.api': 'PizzaShack:1.0.0',
          'throughway.resource': '/menu',
        }
      : { outcome: 'continue' },
});

const rounds = Number(process.argv[2] ?? '500');
const batch = Array.from({ length: 100 }, (_, i) => span(i));
const encoders: [string, () => string | Buffer][] = [
  ['Zipkin v2 JSON', () => JSON.stringify(batch)],
  ['OTLP/JSON', () => otlpJson(batch, 'throughway')],
  ['OTLP protobuf', () => otlpProtobuf(batch, 'throughway')],
];
for (const [name, encode] of encoders) {
  for (let i = 0; i < 100; i++) encode();
  const runs: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < rounds; i++) encode();
    runs.push(Number(process.hrtime.bigint() - t0) / rounds / 1e6);
  }
  runs.sort((a, b) => a - b);
  console.log(
    `${name.padEnd(16)} ${String(Buffer.byteLength(encode())).padStart(6)} bytes  ${(runs[2] as number).toFixed(3)} ms per 100 spans`,
  );
}
