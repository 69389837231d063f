/**
 * Starting a transport for a test: listening on 127.0.0.1, port 0, short timeouts, every fault and
 * exchange collected, closed when the test ends, and checked at the end of the file for illegal state
 * transitions (stats.illegalTransitions must stay 0, whatever the test provoked).
 */
import type { Test } from 'tap';
import {
  createTransport,
  targetFromUrl,
  STATE_NAMES,
  type Transport,
  type TransportFault,
  type SourceRequest,
  type ExchangeRecord,
  type RouteFn,
  type TransportSettings,
} from '../../lib/transport';
import type { ConnectFn } from '../../lib/transport/core';
import { HOST, until } from './client';
import type { RawResult } from './client';

/** Timeouts short enough for a fast suite, long enough for a loaded 2-core machine. */
export const TEST_SETTINGS: Partial<TransportSettings> = Object.freeze({
  socketTimeout: 5000,
  connectTimeout: 2000,
  headerTimeout: 5000,
  keepAliveTimeout: 10_000,
  poolIdleTimeout: 10_000,
  shutdownTimeout: 500,
});

export interface FaultRecord {
  readonly fault: TransportFault;
  readonly req: SourceRequest | undefined;
}

export interface Harness {
  readonly transport: Transport;
  readonly port: number;
  readonly faults: TransportFault[];
  readonly faultRecords: FaultRecord[];
  readonly exchanges: ExchangeRecord[];
  /** Resolves once at least `n` faults were reported (or after `ms`, with what there is). */
  waitFaults(n: number, ms?: number): Promise<TransportFault[]>;
  close(): Promise<void>;
}

export interface StartOptions {
  readonly settings?: Partial<TransportSettings>;
  readonly connect?: ConnectFn;
}

/** Every transport started in this process (one test file): checked by checkTransitions(). */
const started: { label: string; transport: Transport }[] = [];

/** A router that sends everything to one backend URL. */
export function routeTo(url: string): RouteFn {
  const target = targetFromUrl(url);
  return () => ({ target });
}

export async function startTransport(t: Test, route: RouteFn | string, options: StartOptions = {}): Promise<Harness> {
  const faults: TransportFault[] = [];
  const faultRecords: FaultRecord[] = [];
  const exchanges: ExchangeRecord[] = [];
  const transport = createTransport({
    route: typeof route === 'string' ? routeTo(route) : route,
    settings: { ...TEST_SETTINGS, ...options.settings },
    events: {
      onFault(fault, req) {
        faults.push(fault);
        faultRecords.push({ fault, req });
      },
      onExchange(record) {
        exchanges.push(record);
      },
    },
    ...(options.connect === undefined ? {} : { connect: options.connect }),
  });
  const address = await transport.listen({ port: 0, host: HOST });
  started.push({ label: t.name, transport });
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    await transport.close();
  };
  t.teardown(close);
  return {
    transport,
    port: address.port,
    faults,
    faultRecords,
    exchanges,
    async waitFaults(n, ms = 3000) {
      await until(() => faults.length >= n, ms);
      return faults;
    },
    close,
  };
}

/**
 * The last test of every file: no transport the file started made a transition outside states.ts's
 * table (stats.illegalTransitions is the transport's own count of them).
 */
export function checkTransitions(t: Test): void {
  t.test('teardown: no illegal state transitions in any transport of this file', async (t) => {
    t.ok(started.length > 0, 'the file started transports');
    for (const s of started) t.equal(s.transport.stats.illegalTransitions, 0, `illegalTransitions of the transport in "${s.label}"`);
  });
}

export interface ExpectedFault {
  readonly code: number;
  readonly base: number;
  readonly state: number;
  readonly side: 'source' | 'target';
  readonly reason: string;
  readonly httpStatus?: number;
  readonly reused?: boolean;
}

/** One fault with exactly these properties (code = base + state for connection-level codes). */
export function assertFault(t: Test, fault: TransportFault | undefined, want: ExpectedFault, what = 'fault'): void {
  if (fault === undefined) {
    t.fail(`${what}: no fault reported`);
    return;
  }
  const got: Record<string, unknown> = { code: fault.code, base: fault.base, state: fault.state, side: fault.side, reason: fault.reason };
  const expected: Record<string, unknown> = { code: want.code, base: want.base, state: want.state, side: want.side, reason: want.reason };
  if (want.httpStatus !== undefined) {
    got['httpStatus'] = fault.httpStatus;
    expected['httpStatus'] = want.httpStatus;
  }
  if (want.reused !== undefined) {
    got['reused'] = fault.reused;
    expected['reused'] = want.reused;
  }
  t.same(got, expected, `${what}: ${want.code} = ${want.base} + ${want.state} (${want.reason})`);
  t.equal(fault.stateName, STATE_NAMES[want.state], `${what}: state name`);
}

/**
 * The spec's fault body (spec 002 part 7): exactly {"fault":{code,type,message,description}}, the code a
 * number, type "Status report", and a description that names the base and the state.
 */
export function assertFaultBody(t: Test, res: RawResult, status: number, code: number, base: number, state: number): void {
  t.equal(res.status, status, `HTTP status ${status}`);
  t.match(res.headers['content-type'] ?? '', /^application\/json/, 'fault body is JSON');
  t.equal(Number(res.headers['content-length']), res.body.length, 'Content-Length matches the fault body');
  let parsed: unknown;
  try {
    parsed = JSON.parse(res.text);
  } catch {
    t.fail(`fault body is not JSON: ${res.text}`);
    return;
  }
  const fault = (parsed as { fault?: Record<string, unknown> }).fault;
  t.same(Object.keys(parsed as object), ['fault'], 'one top-level member, "fault"');
  if (fault === undefined) return;
  t.same(Object.keys(fault).sort(), ['code', 'description', 'message', 'type'], 'fault members');
  t.equal(fault['code'], code, `fault code ${code}`);
  t.equal(fault['type'], 'Status report');
  t.type(fault['message'], 'string');
  t.ok((fault['message'] as string).length > 0, 'message not empty');
  const description = String(fault['description']);
  t.match(description, `base ${base}`, 'description names the base');
  t.match(description, `state ${STATE_NAMES[state]}(${state})`, 'description names the state');
}

/** Whether a response announces the connection's close. */
export function saysClose(res: { headers: Readonly<Record<string, string>> }): boolean {
  return /(^|,)\s*close\s*(,|$)/i.test(res.headers['connection'] ?? '');
}
