/**
 * One mediation of one body, the same steps on the main thread (small bodies, no script) and in a worker
 * thread (large bodies, scripts): validate -> script -> convert. Pure over its input; the script step is
 * given by the worker (lib/mediation/worker.ts), which alone loads scripts.
 */
import { performance } from 'node:perf_hooks';
import { MultipartError } from './multipart';
import {
  convert,
  readValue,
  validate,
  validateJson,
  validateXml,
  writeValue,
  type ConversionOptions,
  type Format,
  type PayloadError,
} from './payload';

/** What a script sees of a request (docs/mediation.md). */
export interface ScriptMessage {
  readonly method: string;
  /** Path and query as the client sent them. */
  readonly path: string;
  /** Lower-case name -> value (repeated fields joined with ", "). */
  readonly headers: Record<string, string>;
  /** By the message builder of its Content-Type (payload.ts readValue, docs/mediation.md); undefined when empty. */
  body: unknown;
  readonly api: { readonly name: string; readonly version: string };
}

/** What a script may give back: field changes (null removes), a new body, or a status to answer with. */
export interface ScriptChanges {
  readonly headers?: Record<string, string | null>;
  readonly body?: unknown;
  /** Answer the client with this status (and headers, body) instead of calling the backend. */
  readonly status?: number;
}

export interface ScriptCall {
  /** Absolute path of the module. */
  readonly file: string;
  readonly hook: 'onRequest' | 'onResponse';
  /** onResponse: also the backend's status. */
  readonly message: Omit<ScriptMessage, 'body'> & { readonly status?: number };
  readonly timeout: number;
  /** The longest JSON text a hook's result may be, in characters ([throughway.mediation] max_body). */
  readonly maxResult: number;
}

export interface MediateTask {
  readonly body: Uint8Array;
  /** The request's format by [message_builders]. */
  readonly format: Format;
  /** The message's Content-Type (multipart: where the boundary is). */
  readonly contentType?: string;
  readonly validate: 'json' | 'xml' | undefined;
  readonly script: ScriptCall | undefined;
  /** Convert to this format (JSON <-> XML) before forwarding. */
  readonly convertTo: 'json' | 'xml' | undefined;
  readonly conversion: ConversionOptions;
  /** Worker tasks with a time limit: told when the task starts (lib/mediation/pool.ts). */
  readonly started?: import('node:worker_threads').MessagePort;
}

export type ScriptFailure = 'threw' | 'timeout' | 'bad_result' | 'not_found';

export interface MediateResult {
  /** The body to forward (the input's bytes when nothing changed them). */
  readonly body: Uint8Array;
  /** The format of `body` after conversion. */
  readonly format: Format;
  readonly error?: PayloadError;
  readonly scriptFailure?: { readonly kind: ScriptFailure; readonly message: string };
  readonly changes?: ScriptChanges;
  readonly conversionError?: string;
  /** The body does not follow its content type's framing (a multipart body a script was to read). */
  readonly malformed?: string;
  /** A new Content-Type the formatter chose (multipart: a new boundary because a part contained the old). */
  readonly contentType?: string;
  /** ms per step, for flow statistics. */
  readonly validateMs: number;
  readonly scriptMs: number;
  readonly convertMs: number;
}

export type ScriptRunner = (
  call: ScriptCall,
  body: unknown,
) =>
  | { changes?: ScriptChanges; failure?: { kind: ScriptFailure; message: string } }
  | Promise<{ changes?: ScriptChanges; failure?: { kind: ScriptFailure; message: string } }>;

function asBuffer(u: Uint8Array): Buffer {
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}

/** Runs the steps; `runScript` is given in the worker only (the main thread never runs scripts). */
export async function mediate(task: MediateTask, runScript?: ScriptRunner): Promise<MediateResult> {
  let body = asBuffer(task.body);
  let format = task.format;
  let validateMs = 0;
  let scriptMs = 0;
  let convertMs = 0;
  let contentType: string | undefined;
  let t = performance.now();
  if (task.validate !== undefined) {
    const error = validate(task.validate, body);
    validateMs = performance.now() - t;
    if (error !== undefined) return { body, format, error, validateMs, scriptMs, convertMs };
  }
  let changes: ScriptChanges | undefined;
  if (task.script !== undefined && runScript !== undefined) {
    t = performance.now();
    let value: unknown;
    try {
      value = readValue(format, body, task.contentType);
    } catch (err) {
      // Multipart framing that cannot be split is the message's fault (103070 / 103071).
      if (err instanceof MultipartError)
        return {
          body,
          format,
          malformed: `Malformed multipart payload: ${err.message}`,
          validateMs,
          scriptMs: performance.now() - t,
          convertMs,
        };
      // A script gets a body it can use or none: a malformed JSON body reaches it as text.
      value = body.toString('utf8');
    }
    const r = await runScript(task.script, value);
    scriptMs = performance.now() - t;
    if (r.failure !== undefined) return { body, format, scriptFailure: r.failure, validateMs, scriptMs, convertMs };
    changes = r.changes;
    if (changes?.body !== undefined) {
      try {
        const w = writeValue(format, changes.body, task.contentType);
        body = w.body;
        contentType = w.contentType;
      } catch (err) {
        return {
          body,
          format,
          scriptFailure: {
            kind: 'bad_result',
            message: `the body cannot be written as ${format}: ${err instanceof Error ? err.message : String(err)}`,
          },
          validateMs,
          scriptMs,
          convertMs,
        };
      }
    }
    // onRequest: a status answers the call at once; onResponse: it only replaces the backend's.
    if (changes?.status !== undefined && task.script.hook === 'onRequest')
      return { body, format, changes, ...(contentType === undefined ? {} : { contentType }), validateMs, scriptMs, convertMs };
  }
  if (task.convertTo !== undefined && format !== task.convertTo && (format === 'json' || format === 'xml')) {
    t = performance.now();
    try {
      body = convert(format, task.convertTo, body, task.conversion);
      format = task.convertTo;
    } catch (err) {
      convertMs = performance.now() - t;
      const error = format === 'json' ? validateJson(body) : validateXml(body);
      if (error !== undefined) return { body, format, error, validateMs, scriptMs, convertMs };
      return { body, format, conversionError: err instanceof Error ? err.message : String(err), validateMs, scriptMs, convertMs };
    }
    convertMs = performance.now() - t;
  }
  const r: MediateResult =
    changes === undefined ? { body, format, validateMs, scriptMs, convertMs } : { body, format, changes, validateMs, scriptMs, convertMs };
  return contentType === undefined ? r : { ...r, contentType };
}
