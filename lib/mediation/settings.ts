/**
 * The loaded configuration, read for mediation: which deployment.toml keys feed the pool, validation,
 * scripts, conversion and statistics. Read once at gateway creation into a frozen object; an unknown
 * builder or formatter class throws FormatConfigError (naming the alternatives) so the node does not start.
 */
import * as os from 'node:os';
import type { DeploymentConfig } from '../config/types';
import { buildTable, type FormatTable } from './formats';
import type { ConversionOptions } from './payload';

export interface PoolSettings {
  /** [mediation] engine.core_threads: threads kept once the pool exists (at most maxThreads). */
  readonly minThreads: number;
  /** [mediation] engine.max_threads. */
  readonly maxThreads: number;
  /** [mediation] engine.threads_queue_length: tasks waiting for a thread; -1 in the file is Infinity here. */
  readonly maxQueue: number;
  /** [throughway.mediation] worker_heap_mb: old-generation limit of each worker thread. */
  readonly workerHeapMb: number;
  /** [throughway.mediation] thread_idle_timeout: threads above minThreads idle this long are stopped (ms). */
  readonly idleTimeout?: number;
}

export interface MediationSettings {
  /** [passthru_http] force_json_validation / force_xml_validation. */
  readonly validateJson: boolean;
  readonly validateXml: boolean;
  readonly pool: PoolSettings;
  /** [mediation] engine.script_mediator_pool_size: calls of one script running at once. */
  readonly scriptConcurrency: number;
  /** [throughway.mediation] script_timeout (ms). */
  readonly scriptTimeout: number;
  /** [throughway.mediation] max_body: bytes gathered at most (103061 above). */
  readonly maxBody: number;
  /** [throughway.mediation] inline_limit: bodies up to this many bytes are handled on the main thread. */
  readonly inlineLimit: number;
  readonly conversion: ConversionOptions;
  /** [message_builders] + [[custom_message_builders]]: how a request body's content type is read. */
  readonly builders: FormatTable;
  /** [message_formatters] + [[custom_message_formatters]]: how a body is written for its content type. */
  readonly formatters: FormatTable;
  /** [mediation] flow.statistics.enable: a timing line per mediated call. */
  readonly statistics: boolean;
  /** [mediation] stat.tracer.collect_payloads: the payload before and after each step in the trace line. */
  readonly capturePayloads: boolean;
  /** [mediation] stat.tracer.collect_mediation_properties: the message's properties in the trace line. */
  readonly captureProperties: boolean;
}

type ClassSection = Readonly<Record<string, string | undefined>>;

export function mediationSettingsFrom(c: DeploymentConfig): MediationSettings {
  const e = c.mediation.engine;
  const m = c.throughway.mediation;
  const builders = buildTable('message_builders', c.message_builders as unknown as ClassSection, c.custom_message_builders);
  const formatters = buildTable('message_formatters', c.message_formatters as unknown as ClassSection, c.custom_message_formatters);
  // The blocking twins drive no transport here; their classes are still checked so a typo is caught.
  buildTable('blocking.message_builders', c.blocking.message_builders as unknown as ClassSection, c.blocking.custom_message_builders);
  buildTable('blocking.message_formatters', c.blocking.message_formatters as unknown as ClassSection, c.blocking.custom_message_formatters);
  // A worker thread is a V8 isolate doing CPU-bound work only: more threads than cores cannot add throughput
  // and starve the event loop's core, so the spec's Java-sized counts are capped (measured: 64 KiB JSON
  // validation at 67 req/s with 20/100 threads and threads churning, 1,408 req/s with 2; docs/mediation.md).
  const cap = m.thread_cap > 0 ? m.thread_cap : os.availableParallelism();
  const maxThreads = Math.min(e.max_threads, cap);
  return Object.freeze({
    validateJson: c.passthru_http.force_json_validation,
    validateXml: c.passthru_http.force_xml_validation,
    pool: Object.freeze({
      minThreads: Math.min(e.core_threads, maxThreads),
      maxThreads,
      // piscina rejects -1 (its option check); its unbounded queue is Infinity.
      // The threads the cap removes become queue places: a call is refused (103060) only when as many
      // mediations are in flight as the spec's max_threads + threads_queue_length allow.
      maxQueue: e.threads_queue_length < 0 ? Infinity : e.threads_queue_length + (e.max_threads - maxThreads),
      workerHeapMb: m.worker_heap_mb,
      idleTimeout: m.thread_idle_timeout,
    }),
    scriptConcurrency: e.script_mediator_pool_size,
    scriptTimeout: m.script_timeout,
    maxBody: m.max_body,
    inlineLimit: m.inline_limit,
    conversion: Object.freeze({
      preserveNamespace: e.preserve_namespace_on_xml_to_json,
      autoArray: e.json_out_auto_array,
      autoPrimitive: e.enable_auto_primitive,
      ...(e.disable_auto_primitive_regex !== undefined && e.disable_auto_primitive_regex !== ''
        ? { primitiveExempt: e.disable_auto_primitive_regex }
        : {}),
      xmlNil: e.enable_xml_nil,
      namespaceDeclarations: e.enable_namespace_declaration,
      validNcNames: e.build_valid_nc_name,
    }),
    builders,
    formatters,
    statistics: c.mediation.flow.statistics.enable,
    capturePayloads: c.mediation.stat.tracer.collect_payloads,
    captureProperties: c.mediation.stat.tracer.collect_mediation_properties,
  });
}
