/**
 * Mediation: payload validation, script mediation and JSON <-> XML conversion of request bodies, asked by
 * the gateway's mediation phase (lib/gateway/phases/mediation.ts) before the transport-headers phase. It
 * takes plain inputs (the transport's request, the API's name and version, its [mediation] table) and
 * answers continue, a fault, a local answer or the body and fields to forward; the response side gets the
 * gateway's fault renderer passed in.
 *
 * Cost model: a call that needs no mediation (validation off or a content type it does not cover, no
 * script, no conversion on its API) is decided synchronously with no allocation, no Promise and no body
 * buffering. A call that needs it gathers its body through the transport (SourceRequest.readBody, bounded
 * by [throughway.mediation] max_body), then validates and converts small bodies inline and large ones, and
 * every script, in the worker pool (lib/mediation/pool.ts), created on first use.
 */
import { isUtf8 } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import type { Logger } from '../log';
import type { BodyRead, BufferedResponse, LocalResponse, SourceRequest } from '../transport/types';
import { headerValue } from '../transport/headers';
import { GatewayOwnCode, fault, type FaultValue } from '../faults';
import { MediationPool, PoolError } from './pool';
import { describeError, type Format } from './payload';
import type { MediationSettings } from './settings';
import { mediate, type MediateResult, type MediateTask, type ScriptChanges } from './steps';

export { mediationSettingsFrom, type MediationSettings } from './settings';
export { FormatConfigError } from './formats';
export { MediationPool, BlockedThreadsAlert, PoolError } from './pool';
export { placeScript, type ScriptPlace } from './script-path';

/** What an API file asks of mediation ([mediation] table of the API, docs/apis.md). */
export interface ApiMediation {
  /** Absolute path of the script module with onRequest (and later onResponse). */
  readonly script: string | undefined;
  /** Convert request bodies to this format before forwarding. */
  readonly requestFormat: 'json' | 'xml' | undefined;
  /** Convert backend responses to this format before they reach the client. */
  readonly responseFormat: 'json' | 'xml' | undefined;
}

/** The API a mediated call is for: its name and version (the script's message, statistics, traces). */
export interface MediatedApi {
  readonly name: string;
  readonly version: string;
}

/**
 * The request side's answer: undefined (continue with the client's body and fields), a fault, a local
 * answer (a script set a status), or the body to forward and its fields (undefined: the client's).
 */
export type MediationOutcome =
  | { readonly fault: FaultValue }
  | { readonly answer: LocalResponse }
  | { readonly body: Buffer; readonly headers: readonly string[] | undefined }
  | undefined;

/** Renders a fault of the response side as the gateway renders every fault (CORS fields, templates). */
export type FaultRenderer = (f: FaultValue) => LocalResponse;

/** How many bytes of a payload the trace line carries (stat.tracer.collect_payloads). */
const TRACE_BYTES = 4096;

const CONTENT_TYPES: Readonly<Record<'json' | 'xml', string>> = { json: 'application/json', xml: 'application/xml' };

/** One script's concurrency limit (engine.script_mediator_pool_size): calls beyond it wait in order. */
class ScriptGate {
  running = 0;
  readonly waiting: (() => void)[] = [];
}

/** What the mediation service is made of (`new Mediation`), as the other services take theirs. */
export interface MediationOptions {
  readonly settings: MediationSettings;
  readonly logger: Logger;
  /** A worker pool of the embedder's (default: one sized from settings.pool). */
  readonly pool?: MediationPool;
}

/**
 * The mediation service (docs/mediation.md): its settings, its worker pool and the concurrency gates of
 * its scripts. The gateway makes one at start; the mediation phase (lib/gateway/phases/mediation.ts) asks
 * it per call with the call's plain request.
 */
export class Mediation {
  readonly settings: MediationSettings;
  readonly pool: MediationPool;
  private readonly logger: Logger;
  private readonly gates = new Map<string, ScriptGate>();

  constructor(o: MediationOptions) {
    this.settings = o.settings;
    this.logger = o.logger;
    this.pool = o.pool ?? new MediationPool(o.settings.pool, { logger: o.logger });
  }

  /**
   * Whether the backend's response is gathered and mediated when it is complete (onResponse,
   * response_format): the phase then hands the transport a hook calling response().
   */
  mediatesResponse(am: ApiMediation | undefined): am is ApiMediation {
    return am !== undefined && (am.script !== undefined || am.responseFormat !== undefined);
  }

  /**
   * The request side: undefined (continue, synchronously) when the call needs nothing, else a Promise of the
   * outcome. Only fields already parsed are read; nothing is allocated on the way out.
   */
  request(req: SourceRequest, api: MediatedApi | undefined, am: ApiMediation | undefined): Promise<MediationOutcome> | undefined {
    const s = this.settings;
    if (!s.validateJson && !s.validateXml && am === undefined) return undefined;
    const hasBody = req.chunked || req.contentLength > 0;
    let format: Format = 'binary';
    let validate: 'json' | 'xml' | undefined;
    let contentType: string | undefined;
    if (hasBody) {
      contentType = headerValue(req.headers, 'content-type');
      format = s.builders.of(contentType);
      if ((format === 'json' && s.validateJson) || (format === 'xml' && s.validateXml)) validate = format;
    }
    const script = am?.script;
    const convertTo =
      hasBody && am?.requestFormat !== undefined && am.requestFormat !== format && (format === 'json' || format === 'xml')
        ? am.requestFormat
        : undefined;
    if (validate === undefined && script === undefined && convertTo === undefined) return undefined;
    return this.run(req, api, format, contentType, validate, script, convertTo);
  }

  private async run(
    req: SourceRequest,
    api: MediatedApi | undefined,
    format: Format,
    contentType: string | undefined,
    validate: 'json' | 'xml' | undefined,
    script: string | undefined,
    convertTo: 'json' | 'xml' | undefined,
  ): Promise<MediationOutcome> {
    const s = this.settings;
    const started = performance.now();
    if (req.readBody === undefined)
      return {
        fault: fault(GatewayOwnCode.MEDIATION_FAILED, { description: 'The transport serving this call cannot hand over request bodies' }),
      };
    const read: BodyRead = await req.readBody(s.maxBody);
    if (!read.ok) {
      if (read.reason === 'too_large')
        return {
          fault: fault(GatewayOwnCode.MEDIATION_BODY_TOO_LARGE, {
            description: `The request body (${read.size} bytes or more) exceeds the mediation limit of ${s.maxBody} bytes (throughway.mediation.max_body)`,
          }),
        };
      // 'aborted': the client went away, nobody reads the answer; 'already_read': another phase took it.
      return { fault: fault(GatewayOwnCode.MEDIATION_FAILED, { description: `The request body could not be read (${read.reason})` }) };
    }
    const readMs = performance.now() - started;
    const input = read.body;
    const task: MediateTask = {
      body: input,
      format,
      contentType,
      validate,
      script:
        script === undefined
          ? undefined
          : {
              file: script,
              hook: 'onRequest',
              timeout: s.scriptTimeout,
              maxResult: s.maxBody,
              message: {
                method: req.method,
                path: req.url,
                headers: headerObject(req.headers),
                api: { name: api?.name ?? '', version: api?.version ?? '' },
              },
            },
      convertTo,
      conversion: s.conversion,
    };
    const pooled = script !== undefined || input.length > s.inlineLimit;
    const bytesIn = input.length;
    const traceIn = s.capturePayloads ? traceText(input) : undefined; // before the buffer is transferred
    let result: MediateResult;
    try {
      if (!pooled) result = await mediate(task);
      else if (script !== undefined) result = await this.runScript(script, task);
      else result = await this.pool.run(task);
    } catch (err) {
      return { fault: poolFault(err) };
    }
    const outcome = this.outcome(req, result, format);
    if (s.statistics) {
      this.logger.log('info', 'mediation_statistics', {
        api: api === undefined ? undefined : `${api.name}:${api.version}`,
        method: req.method,
        url: req.url,
        bytesIn,
        bytesOut: result.body.byteLength,
        pooled,
        readMs: round(readMs),
        validateMs: round(result.validateMs),
        scriptMs: round(result.scriptMs),
        convertMs: round(result.convertMs),
        totalMs: round(performance.now() - started),
        fault: outcome !== undefined && 'fault' in outcome ? outcome.fault.def.code : undefined,
      });
    }
    if (s.capturePayloads || s.captureProperties) {
      const answered = outcome !== undefined && 'answer' in outcome ? outcome.answer : undefined;
      const forwarded = outcome !== undefined && 'body' in outcome ? outcome.headers : undefined;
      this.trace(
        'request',
        req,
        api,
        traceIn,
        result,
        s.captureProperties
          ? {
              format,
              contentType,
              pooled,
              validated: validate !== undefined,
              status: answered?.status,
              headers: headerObject(answered?.headers ?? forwarded ?? req.headers),
            }
          : undefined,
      );
    }
    return outcome;
  }

  /**
   * The backend's whole response -> what the client gets: onResponse, then response_format. `render` turns
   * a fault of this side into the client's answer.
   */
  async response(
    req: SourceRequest,
    api: MediatedApi | undefined,
    am: ApiMediation,
    res: BufferedResponse,
    render: FaultRenderer,
  ): Promise<LocalResponse> {
    const s = this.settings;
    const started = performance.now();
    const contentType = headerValue(res.headers, 'content-type');
    const format = s.builders.of(contentType);
    const convertTo =
      am.responseFormat !== undefined && am.responseFormat !== format && (format === 'json' || format === 'xml')
        ? am.responseFormat
        : undefined;
    const script = am.script;
    // [passthru_http] force_*_validation covers the backend's body too once it is gathered anyway.
    const validate = (format === 'json' && s.validateJson) || (format === 'xml' && s.validateXml) ? format : undefined;
    if (script === undefined && convertTo === undefined && validate === undefined)
      return { status: res.status, headers: res.headers, body: res.body };
    const task: MediateTask = {
      body: res.body,
      format,
      contentType,
      validate,
      script:
        script === undefined
          ? undefined
          : {
              file: script,
              hook: 'onResponse',
              timeout: s.scriptTimeout,
              maxResult: s.maxBody,
              message: {
                method: req.method,
                path: req.url,
                headers: headerObject(res.headers),
                status: res.status,
                api: { name: api?.name ?? '', version: api?.version ?? '' },
              },
            },
      convertTo,
      conversion: s.conversion,
    };
    const pooled = script !== undefined || res.body.length > s.inlineLimit;
    const bytesIn = res.body.length;
    const traceIn = s.capturePayloads ? traceText(res.body) : undefined; // before the buffer is transferred
    let r: MediateResult;
    try {
      if (!pooled) r = await mediate(task);
      else if (script !== undefined) r = await this.runScript(script, task);
      else r = await this.pool.run(task);
    } catch (err) {
      return render(poolFault(err));
    }
    let f: FaultValue | undefined;
    if (r.scriptFailure !== undefined)
      f = fault(r.scriptFailure.kind === 'timeout' ? GatewayOwnCode.SCRIPT_TIMEOUT : GatewayOwnCode.SCRIPT_FAILED, {
        description: r.scriptFailure.message,
      });
    else if (r.error !== undefined || r.malformed !== undefined) {
      // The backend's body, not the client's: an invalid response from upstream is 502 (RFC 9110 §15.6.3).
      f = fault(GatewayOwnCode.MALFORMED_BACKEND_PAYLOAD, {
        description: `The backend response is malformed: ${r.error !== undefined ? describeError(r.error) : r.malformed}`,
      });
    } else if (r.conversionError !== undefined)
      f = fault(GatewayOwnCode.MEDIATION_FAILED, { description: `The backend response could not be converted: ${r.conversionError}` });
    if (s.statistics) {
      this.logger.log('info', 'mediation_statistics', {
        direction: 'response',
        api: api === undefined ? undefined : `${api.name}:${api.version}`,
        method: req.method,
        url: req.url,
        status: res.status,
        bytesIn,
        bytesOut: r.body.byteLength,
        pooled,
        validateMs: round(r.validateMs),
        scriptMs: round(r.scriptMs),
        convertMs: round(r.convertMs),
        totalMs: round(performance.now() - started),
        fault: f?.def.code,
      });
    }
    let answer: LocalResponse;
    if (f !== undefined) answer = render(f);
    else {
      let headers: readonly string[] = res.headers;
      const changes = r.changes;
      if (changes?.headers !== undefined) headers = applyHeaderChanges(headers, changes.headers);
      if (r.format !== format) headers = applyHeaderChanges(headers, { 'Content-Type': CONTENT_TYPES[r.format as 'json' | 'xml'] });
      if (r.contentType !== undefined) headers = applyHeaderChanges(headers, { 'Content-Type': r.contentType });
      answer = { status: changes?.status ?? res.status, headers, body: Buffer.from(r.body.buffer, r.body.byteOffset, r.body.byteLength) };
    }
    if (s.capturePayloads || s.captureProperties)
      this.trace(
        'response',
        req,
        api,
        traceIn,
        r,
        s.captureProperties
          ? {
              format,
              contentType,
              pooled,
              validated: validate !== undefined,
              backendStatus: res.status,
              status: answer.status,
              headers: headerObject(answer.headers ?? []),
            }
          : undefined,
      );
    return answer;
  }

  /**
   * The trace line (spec 001 stat.tracer.*): the payload before and after mediation (collect_payloads, the
   * first TRACE_BYTES of each) and the message's properties after it (collect_mediation_properties: the
   * formats, the fields as they leave, the status, the steps' timings and changes).
   */
  private trace(
    direction: 'request' | 'response',
    req: SourceRequest,
    api: MediatedApi | undefined,
    payloadIn: string | undefined,
    r: MediateResult,
    props: Record<string, unknown> | undefined,
  ): void {
    const line: Record<string, unknown> = { direction, url: req.url };
    if (payloadIn !== undefined) {
      line.payloadIn = payloadIn;
      line.payloadOut = traceText(Buffer.from(r.body.buffer, r.body.byteOffset, r.body.byteLength));
    }
    if (props !== undefined) {
      line.properties = {
        api: api === undefined ? undefined : `${api.name}:${api.version}`,
        method: req.method,
        ...props,
        formatOut: r.format,
        bytesOut: r.body.byteLength,
        scriptChanged: r.changes === undefined ? undefined : Object.keys(r.changes).sort(),
        fault: r.error !== undefined ? describeError(r.error) : (r.malformed ?? r.conversionError ?? r.scriptFailure?.message),
        validateMs: round(r.validateMs),
        scriptMs: round(r.scriptMs),
        convertMs: round(r.convertMs),
      };
    }
    this.logger.log('info', 'mediation_trace', line);
  }

  /** The per-script gate (engine.script_mediator_pool_size), then the pool. */
  private async runScript(file: string, task: MediateTask): Promise<MediateResult> {
    let gate = this.gates.get(file);
    if (gate === undefined) {
      gate = new ScriptGate();
      this.gates.set(file, gate);
    }
    if (gate.running >= this.settings.scriptConcurrency) {
      const max = this.settings.pool.maxQueue;
      if (gate.waiting.length >= max)
        throw new PoolError('queue_full', `script ${file}: ${gate.running} calls run and ${gate.waiting.length} wait`);
      await new Promise<void>((resolve) => (gate as ScriptGate).waiting.push(resolve));
    }
    gate.running++;
    try {
      // A grace beyond the script's own (vm) limit: that one stops synchronous loops and keeps the thread;
      // this one ends the thread of a call that never settles (an endless asynchronous loop).
      return await this.pool.run(task, this.settings.scriptTimeout + 200);
    } finally {
      gate.running--;
      const next = gate.waiting.shift();
      if (next !== undefined) next();
    }
  }

  /** A mediation result -> the request side's outcome: a fault, a local answer, or the body and fields to forward. */
  private outcome(req: SourceRequest, r: MediateResult, formatIn: Format): MediationOutcome {
    if (r.error !== undefined) {
      return {
        fault: fault(r.error.format === 'json' ? GatewayOwnCode.MALFORMED_JSON : GatewayOwnCode.MALFORMED_XML, {
          description: describeError(r.error),
        }),
      };
    }
    if (r.scriptFailure !== undefined) {
      const f = r.scriptFailure;
      return {
        fault: fault(f.kind === 'timeout' ? GatewayOwnCode.SCRIPT_TIMEOUT : GatewayOwnCode.SCRIPT_FAILED, { description: f.message }),
      };
    }
    if (r.malformed !== undefined) return { fault: fault(GatewayOwnCode.MALFORMED_MULTIPART, { description: r.malformed }) };
    if (r.conversionError !== undefined) return { fault: fault(GatewayOwnCode.CONVERSION_FAILED, { description: r.conversionError }) };
    const body = Buffer.from(r.body.buffer, r.body.byteOffset, r.body.byteLength);
    const changes = r.changes;
    let headers: readonly string[] = req.headers;
    if (changes?.headers !== undefined) headers = applyHeaderChanges(headers, changes.headers);
    if (r.format !== formatIn) headers = applyHeaderChanges(headers, { 'Content-Type': CONTENT_TYPES[r.format as 'json' | 'xml'] });
    if (r.contentType !== undefined) headers = applyHeaderChanges(headers, { 'Content-Type': r.contentType });
    if (changes?.status !== undefined) return { answer: answerOf(changes, body, headers !== req.headers ? changes.headers : undefined) };
    return { body, headers: headers !== req.headers ? headers : undefined };
  }

  async close(): Promise<void> {
    await this.pool.close();
  }
}

function answerOf(
  changes: ScriptChanges,
  body: Buffer,
  fields: Record<string, string | null> | undefined,
): { status: number; headers: string[]; body: Buffer } {
  const headers: string[] = [];
  if (fields !== undefined)
    for (const [k, v] of Object.entries(fields))
      if (v !== null && k.toLowerCase() !== 'content-length' && k.toLowerCase() !== 'transfer-encoding') headers.push(k, v);
  if (changes.body !== undefined && !headers.some((h, i) => i % 2 === 0 && h.toLowerCase() === 'content-type'))
    headers.push('Content-Type', typeof changes.body === 'string' ? 'text/plain; charset=UTF-8' : 'application/json');
  return { status: changes.status as number, headers, body: changes.body === undefined ? Buffer.alloc(0) : body };
}

function poolFault(err: unknown): ReturnType<typeof fault> {
  if (err instanceof PoolError) {
    switch (err.kind) {
      case 'queue_full':
        return fault(GatewayOwnCode.MEDIATION_QUEUE_FULL, { description: err.message });
      case 'timeout':
        return fault(GatewayOwnCode.SCRIPT_TIMEOUT, { description: err.message });
      case 'out_of_memory':
        return fault(GatewayOwnCode.SCRIPT_RESOURCE_LIMIT, { description: err.message });
      default:
        return fault(GatewayOwnCode.MEDIATION_FAILED, { description: err.message });
    }
  }
  return fault(GatewayOwnCode.MEDIATION_FAILED, { description: err instanceof Error ? err.message : String(err) });
}

/** The first TRACE_BYTES of a payload for the trace line: text as it is, other bytes as base64. */
function traceText(b: Uint8Array): string {
  const head = Buffer.from(b.buffer, b.byteOffset, Math.min(b.byteLength, TRACE_BYTES));
  // The cut may split a UTF-8 sequence (at most 3 bytes of it): text stays text.
  if (isUtf8(head)) return head.toString('utf8');
  if (b.byteLength > TRACE_BYTES)
    for (let cut = 1; cut <= 3; cut++) if (isUtf8(head.subarray(0, head.length - cut))) return head.toString('utf8', 0, head.length - cut);
  return `base64:${head.toString('base64')}`;
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

/** Lower-case name -> value, repeated fields joined with ", " (RFC 9110 §5.3). */
function headerObject(headers: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < headers.length; i += 2) {
    const k = (headers[i] as string).toLowerCase();
    const v = headers[i + 1] as string;
    out[k] = out[k] === undefined ? v : `${out[k]}, ${v}`;
  }
  return out;
}

/** A new field array: each named field replaced (first occurrence) or removed (null), new ones appended. */
export function applyHeaderChanges(headers: readonly string[], changes: Readonly<Record<string, string | null>>): string[] {
  const byLower = new Map<string, [string, string | null]>();
  for (const [k, v] of Object.entries(changes)) byLower.set(k.toLowerCase(), [k, v]);
  const out: string[] = [];
  const done = new Set<string>();
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    const lower = name.toLowerCase();
    const c = byLower.get(lower);
    if (c === undefined) {
      out.push(name, headers[i + 1] as string);
      continue;
    }
    if (done.has(lower)) continue;
    done.add(lower);
    if (c[1] !== null) out.push(name, c[1]);
  }
  for (const [lower, [k, v]] of byLower) if (!done.has(lower) && v !== null) out.push(k, v);
  return out;
}
