/**
 * Spans as an OTLP trace export request (OpenTelemetry protocol, docs/tracing.md "OTLP"): the body of
 * `POST /v1/traces` in its two HTTP encodings, binary protobuf (`application/x-protobuf`) and JSON
 * (`application/json`). The messages are those of opentelemetry-proto's
 * collector/trace/v1/trace_service.proto (ExportTraceServiceRequest) and the trace, common and resource
 * files it imports; only the fields throughway fills are written, so the encoder below is a few message
 * types by hand (protobuf encoding: protobuf.dev "Encoding", wire types 0 varint, 1 fixed64, 2 length
 * delimited, 5 fixed32). JSON follows the OTLP specification's JSON mapping: ids as hex strings (not
 * base64), enums as numbers, 64-bit integers as decimal strings.
 *
 * Off the request path: the exporter's timer encodes one batch at a time.
 */
import type { Span } from './tracing';

/** Span.SpanKind (trace.proto). Phases are the gateway's own work: INTERNAL. */
const KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3 } as const;
/** Status.StatusCode (trace.proto). */
const STATUS_ERROR = 2;
/** The instrumentation scope named in every request. */
export const OTLP_SCOPE = 'throughway';

interface Attribute {
  readonly key: string;
  readonly value: string | number;
}

/** What one span becomes: the fields of trace.proto's Span that are written. */
interface OtlpSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  readonly name: string;
  readonly kind: number;
  /** Epoch nanoseconds. */
  readonly start: bigint;
  readonly end: bigint;
  readonly attributes: readonly Attribute[];
  readonly error: string | undefined;
}

function otlpSpan(s: Span): OtlpSpan {
  const attributes: Attribute[] = [];
  for (const [key, value] of Object.entries(s.tags ?? {})) {
    // http.status_code is a number in OpenTelemetry's HTTP conventions; the other tags stay text.
    attributes.push({ key, value: key === 'http.status_code' && /^\d+$/.test(value) ? Number(value) : value });
  }
  const r = s.remoteEndpoint;
  if (r !== undefined) {
    const address = r.ipv4 ?? r.ipv6 ?? r.serviceName;
    // OpenTelemetry's semantic conventions: the peer of a SERVER span is the client, of a CLIENT span the server.
    const side = s.kind === 'CLIENT' ? 'server' : 'client';
    if (address !== undefined) attributes.push({ key: `${side}.address`, value: address });
    if (r.port !== undefined) attributes.push({ key: `${side}.port`, value: r.port });
  }
  const start = BigInt(s.timestamp) * 1000n;
  return {
    traceId: s.traceId,
    spanId: s.id,
    parentSpanId: s.parentId,
    name: s.name,
    kind: s.kind === 'SERVER' ? KIND.SERVER : s.kind === 'CLIENT' ? KIND.CLIENT : KIND.INTERNAL,
    start,
    end: start + BigInt(s.duration) * 1000n,
    attributes,
    error: s.tags?.error,
  };
}

// ---------------------------------------------------------------- JSON

const jsonValue = (v: string | number): Record<string, unknown> => (typeof v === 'number' ? { intValue: String(v) } : { stringValue: v });

/** The ExportTraceServiceRequest in OTLP/JSON. */
export function otlpJson(spans: readonly Span[], serviceName: string): string {
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: serviceName } }] },
        scopeSpans: [
          {
            scope: { name: OTLP_SCOPE },
            spans: spans.map((raw) => {
              const s = otlpSpan(raw);
              return {
                traceId: s.traceId,
                spanId: s.spanId,
                ...(s.parentSpanId !== undefined ? { parentSpanId: s.parentSpanId } : {}),
                name: s.name,
                kind: s.kind,
                startTimeUnixNano: s.start.toString(),
                endTimeUnixNano: s.end.toString(),
                attributes: s.attributes.map((a) => ({ key: a.key, value: jsonValue(a.value) })),
                ...(s.error !== undefined ? { status: { code: STATUS_ERROR, message: s.error } } : {}),
              };
            }),
          },
        ],
      },
    ],
  });
}

// ---------------------------------------------------------------- protobuf

/** A message being written into one growing buffer (embedded messages are written apart, then copied in). */
class Writer {
  private buf = Buffer.allocUnsafe(64);
  private len = 0;

  private room(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(grown, 0, 0, this.len);
    this.buf = grown;
  }

  /** Non-negative integers up to 2^53 in number arithmetic; a BigInt (a negative int64's two's complement) bit by bit. */
  private varint(n: number | bigint): void {
    this.room(10);
    const b = this.buf;
    if (typeof n === 'bigint') {
      let v = n;
      while (v > 0x7fn) {
        b[this.len++] = Number(v & 0x7fn) | 0x80;
        v >>= 7n;
      }
      b[this.len++] = Number(v);
      return;
    }
    let v = n;
    while (v > 0x7f) {
      b[this.len++] = (v % 128) | 0x80;
      v = Math.floor(v / 128);
    }
    b[this.len++] = v;
  }

  private tag(field: number, wire: number): void {
    this.varint((field << 3) | wire);
  }

  private raw(b: Buffer): void {
    this.room(b.length);
    b.copy(this.buf, this.len);
    this.len += b.length;
  }

  /** Wire type 0. Proto3 leaves a zero out. */
  uint(field: number, n: number): this {
    if (n === 0) return this;
    this.tag(field, 0);
    this.varint(n);
    return this;
  }

  /** int64 as a varint: two's complement for negatives (protobuf.dev, "Signed Integers"); a oneof member is written even when 0. */
  int64(field: number, n: number, always = false): this {
    if (n === 0 && !always) return this;
    this.tag(field, 0);
    this.varint(n < 0 ? (1n << 64n) + BigInt(n) : n);
    return this;
  }

  /** Wire type 1, little-endian. */
  fixed64(field: number, n: bigint): this {
    this.tag(field, 1);
    this.room(8);
    this.buf.writeBigUInt64LE(n, this.len);
    this.len += 8;
    return this;
  }

  /** Wire type 2. */
  bytes(field: number, b: Buffer): this {
    if (b.length === 0) return this;
    this.tag(field, 2);
    this.varint(b.length);
    this.raw(b);
    return this;
  }

  string(field: number, s: string): this {
    if (s === '') return this;
    const n = Buffer.byteLength(s, 'utf8');
    this.tag(field, 2);
    this.varint(n);
    this.room(n);
    this.buf.write(s, this.len, 'utf8');
    this.len += n;
    return this;
  }

  /** An embedded message, written even when empty (its presence can mean something). */
  message(field: number, m: Writer): this {
    this.tag(field, 2);
    this.varint(m.len);
    this.room(m.len);
    m.buf.copy(this.buf, this.len, 0, m.len);
    this.len += m.len;
    return this;
  }

  finish(): Buffer {
    return this.buf.subarray(0, this.len);
  }
}

/** common.proto KeyValue { key = 1; AnyValue value = 2 }, AnyValue { string_value = 1; int_value = 3 }. */
function keyValue(a: Attribute): Writer {
  const value = new Writer();
  // A oneof member is written even when empty or 0: its presence says which value it is.
  if (typeof a.value === 'number') value.int64(3, a.value, true);
  else if (a.value === '') value.message(1, new Writer());
  else value.string(1, a.value);
  return new Writer().string(1, a.key).message(2, value);
}

/** The ExportTraceServiceRequest in binary protobuf. */
export function otlpProtobuf(spans: readonly Span[], serviceName: string): Buffer {
  const scopeSpans = new Writer().message(1, new Writer().string(1, OTLP_SCOPE));
  for (const raw of spans) {
    const s = otlpSpan(raw);
    // trace.proto Span: trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6, start 7, end 8,
    // attributes 9, status 15 (Status: message 2, code 3).
    const w = new Writer()
      .bytes(1, Buffer.from(s.traceId, 'hex'))
      .bytes(2, Buffer.from(s.spanId, 'hex'))
      .bytes(4, s.parentSpanId !== undefined ? Buffer.from(s.parentSpanId, 'hex') : Buffer.alloc(0))
      .string(5, s.name)
      .uint(6, s.kind)
      .fixed64(7, s.start)
      .fixed64(8, s.end);
    for (const a of s.attributes) w.message(9, keyValue(a));
    if (s.error !== undefined) w.message(15, new Writer().string(2, s.error).uint(3, STATUS_ERROR));
    scopeSpans.message(2, w);
  }
  // resource.proto Resource { attributes = 1 }; ResourceSpans { resource = 1; scope_spans = 2 }.
  const resource = new Writer().message(1, keyValue({ key: 'service.name', value: serviceName }));
  const resourceSpans = new Writer().message(1, resource).message(2, scopeSpans);
  return new Writer().message(1, resourceSpans).finish();
}
