/**
 * The gateway's events for embedders: `gateway.on('fault' | 'request', listener)`.
 *
 * Not a node:events EventEmitter: its 'error' event throws when nobody listens, and a listener that throws
 * would unwind into the transport's socket callbacks. Here a listener's exception is logged and the next
 * listener runs. Emitting costs one length check when nobody listens, and the gateway builds no event
 * object then (the transport builds exchange records only when someone consumes them).
 */
import type { TransportFault } from '../transport/codes';
import type { ExchangeRecord } from '../transport/types';
import type { Logger } from '../log';

/** One fault the gateway answered (or, for client-side I/O faults, could no longer answer). */
export interface GatewayFaultEvent {
  /** The code in the fault body: spec codes, transport code + state, or throughway's own (docs/faults.md). */
  readonly code: number;
  /** The HTTP status sent (a custom template may change the table's). */
  readonly status: number;
  /** 'transport': a connection fault (backend refused, timeout, bad request bytes); 'gateway': a phase's. */
  readonly source: 'transport' | 'gateway';
  readonly method: string | undefined;
  readonly url: string | undefined;
  readonly remoteAddress: string | undefined;
  /** The transport fault itself (base, state, reason, side) when source is 'transport'. */
  readonly transportFault: TransportFault | undefined;
}

/** Events by name, each with its listener's arguments. */
export interface GatewayEventMap {
  /** A fault: when the transport raises it, or when the exchange a phase faulted ends. */
  fault: [event: GatewayFaultEvent];
  /** An exchange ended (answered, forwarded, faulted or aborted): the access log's record. */
  request: [record: ExchangeRecord];
}

export type GatewayEventName = keyof GatewayEventMap;
export type GatewayListener<K extends GatewayEventName> = (...args: GatewayEventMap[K]) => void;

export class GatewayEvents {
  private readonly lists: { [K in GatewayEventName]: GatewayListener<K>[] } = { fault: [], request: [] };

  constructor(
    private readonly logger: Logger,
    /** Called when the first listener of any event is added (the gateway turns exchange records on). */
    private readonly onFirst: () => void,
  ) {}

  on<K extends GatewayEventName>(name: K, listener: GatewayListener<K>): void {
    const list = this.lists[name] as GatewayListener<K>[] | undefined;
    if (list === undefined) throw new TypeError(`unknown gateway event "${String(name)}": use ${Object.keys(this.lists).join(' or ')}`);
    list.push(listener);
    this.onFirst();
  }

  off<K extends GatewayEventName>(name: K, listener: GatewayListener<K>): void {
    const list = this.lists[name] as GatewayListener<K>[] | undefined;
    const i = list?.indexOf(listener) ?? -1;
    if (list !== undefined && i >= 0) list.splice(i, 1);
  }

  has(name: GatewayEventName): boolean {
    return this.lists[name].length > 0;
  }

  emit<K extends GatewayEventName>(name: K, ...args: GatewayEventMap[K]): void {
    const list = this.lists[name] as GatewayListener<K>[];
    // A copy only when there is someone: a listener may remove itself while it runs.
    for (const fn of list.length === 1 ? list : list.slice()) {
      try {
        fn(...args);
      } catch (err) {
        this.logger.log('error', 'gateway_listener_failed', {
          gatewayEvent: name,
          message: err instanceof Error ? err.message : String(err),
        });
      }
    }
  }
}

export function transportFaultEvent(
  f: TransportFault,
  req: { readonly method: string; readonly url: string; readonly remoteAddress: string } | undefined,
): GatewayFaultEvent {
  return {
    code: f.code,
    status: f.httpStatus,
    source: 'transport',
    method: req?.method,
    url: req?.url,
    remoteAddress: req?.remoteAddress,
    transportFault: f,
  };
}

export function gatewayFaultEvent(r: ExchangeRecord): GatewayFaultEvent {
  return {
    code: r.faultCode as number,
    status: r.status,
    source: 'gateway',
    method: r.method,
    url: r.url,
    remoteAddress: r.remoteAddress,
    transportFault: undefined,
  };
}
